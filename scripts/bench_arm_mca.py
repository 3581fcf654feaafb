#!/usr/bin/env python3
"""Static speed estimates of the arm64 kernels without arm64 hardware: LLVM's machine-code analyzer (llvm-mca)
on the hot inner loop of each of our kernels (Sources/CLeapKernels/arm) and of llama.cpp's ARM kernels (its
ggml-cpu/arch/arm sources: the repacked gemv / gemm of Q4_0, Q8_0, Q4_K, Q5_K, Q6_K that its CPU backend runs
by default, ggml_vec_dot for Q4_1, Q5_0, Q5_1, Q2_K, Q3_K), both compiled here by clang -O3 for aarch64, and prints cycles
per 256 weights per token for each type and phase on Cortex-A76, Neoverse-N1, Neoverse-V1 and V2 models.

  python3 scripts/bench_arm_mca.py --llama <llama.cpp source dir> [--mca llvm-mca-15] [--cpus a,b]

A loop's work is counted from its integer multiply instructions (sdot 16 multiply-adds, smmla 32, smull /
smlal of bytes 8), so cycles per 256 weight·token products = cycles per iteration × 256 / products per
iteration; the loop taken is the innermost one holding such instructions (with the most of them). Phases:
matvec (1 token), few (2..15 tokens), gemm (16 and more); Q4_0 and Q8_0 in the 8-row layout the loader packs
them into for these tables (their rows8 entries). Our tables per CPU: the dotprod table on Cortex-A76
and Neoverse-N1, the i8mm table on Neoverse-V1/V2; llama.cpp is built for the same level (the dotprod or the
i8mm kernels it picks there; on V1 it would take its SVE Q4_0 8x8 kernel, not modelled here). These are
static estimates of the loops alone (no caches, no memory, no loop overheads outside them), not timings.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(REPO, "Sources", "CLeapKernels")
SYSROOT = "/usr/aarch64-linux-gnu"

# cpu -> (level, llama.cpp's -march at that level)
CPUS = {
    "cortex-a76": ("dotprod", "armv8.2-a+dotprod+fp16"),
    "neoverse-n1": ("dotprod", "armv8.2-a+dotprod+fp16"),
    "neoverse-v1": ("i8mm", "armv8.4-a+dotprod+fp16+i8mm+bf16"),
    "neoverse-v2": ("i8mm", "armv9-a+dotprod+fp16+i8mm+bf16"),
}
TYPES = ["q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K"]
PHASES = ["matvec", "few", "gemm"]
REPACKED = {"q4_0": ("4x4", "4x8"), "q8_0": ("4x4", "4x8"), "q4_K": ("8x4", "8x8"), "q5_K": ("8x4", "8x8"),
            "q6_K": ("8x4", "8x8")}
ROWS8 = ("q4_0", "q8_0")  # types with rows8 entries in the dotprod and i8mm tables (arm/rows8.c, arm/i8mm.c)
ROWS8_KQUANT = ("q4_K", "q5_K", "q6_K")  # rows8 entries of the dotprod table: arm/rows8_kquant.c
ROWS8_KQUANT_I8MM = ("q4_K", "q6_K")  # and of the i8mm table: i8mm_kquant.c (one token on rows8_kquant.c)
ACT = {"q4_0": "q8_0", "q8_0": "q8_0", "q4_1": "q8_1", "q5_0": "q8_0", "q5_1": "q8_1", "q4_K": "q8_K",
       "q5_K": "q8_K", "q6_K": "q8_K", "q2_K": "q8_K", "q3_K": "q8_K"}


def ours(t, phase, level):
    """(asm file key, function, loop filter) of our kernel of type t, phase, at level"""
    if t in ("q2_K", "q3_K"):  # arm/low_bit_kquants.c: 2 tokens and more on its token tiles
        return "ours-lowk", ("matvec_" if phase == "matvec" else "tokens_") + t, None
    if t in ROWS8_KQUANT and (level != "i8mm" or t in ROWS8_KQUANT_I8MM):  # the loader packs these into the 8-row layout too
        if phase == "matvec":
            return "ours-rows8-kquant", f"rows8_one_{t}", None
        if level == "i8mm":
            return "ours-i8mm-kquant", f"rows8_{t}", None
        return "ours-rows8-kquant", f"rows8_few_{t}", None
    if level == "i8mm" and t in ("q4_K", "q5_K", "q6_K") and phase != "matvec":
        return "ours-i8mm-kquant", f"gemm_{t}", None
    if t in ROWS8:  # the loader packs these into the 8-row layout (LK_ROWS8): the tables' rows8 entries
        if phase == "matvec":
            return "ours-rows8", f"rows8_one_{t}", None
        if level == "i8mm":
            return "ours-i8mm", f"rows8_tiles_{t}", None
        return "ours-rows8", f"rows8_few_{t}", None
    return "ours-dotprod", ("matvec_" if phase == "matvec" else "few_") + t, None


def llama(t, phase, level):
    if t in REPACKED:
        layout = REPACKED[t][0 if level == "dotprod" else 1]
        kind = "gemv" if phase == "matvec" else "gemm"
        return "llama-repack-" + level, f"ggml_{kind}_{t}_{layout}_{ACT[t]}", None
    # ggml_vec_dot: its nrc == 2 loop (smmla) for 2 tokens and more where the CPU has i8mm
    want_mmla = level == "i8mm" and phase != "matvec"
    return "llama-quants-" + level, f"ggml_vec_dot_{t}_{ACT[t]}", want_mmla


MAC_RULES = [(re.compile(r"^\s*[su]dot\s"), 16), (re.compile(r"^\s*(s|u|us)mmla\s"), 32),
             (re.compile(r"^\s*[su](mull2?|mlal2?)\s+v\d+\.8h"), 8)]


def macs(line):
    for rx, n in MAC_RULES:
        if rx.search(line):
            return n
    return 0


INST_DECODED = {}
MODELS = {}  # cpu -> the scheduling model llvm-mca took for it (its resource units' prefix)


def decode_inst_words(mc, asm):
    """the instructions behind the `.inst 0x...` words of asm, by llvm-mc's disassembler"""
    words = sorted({int(w, 16) for w in re.findall(r"^\s*\.inst\s+(0x[0-9a-fA-F]+)\s*$", asm, re.M)} - set(INST_DECODED))
    if not words:
        return
    text = "\n".join(" ".join(f"0x{(w >> (8 * k)) & 0xff:02x}" for k in range(4)) for w in words) + "\n"
    r = subprocess.run([mc, "-disassemble", "-triple=aarch64", "-mattr=+dotprod,+i8mm,+fullfp16,+bf16"],
                       input=text, capture_output=True, text=True, check=True)
    ins = [ln.split("//")[0].strip() for ln in r.stdout.splitlines() if ln.strip() and not ln.strip().startswith(".")]
    if len(ins) == len(words):
        INST_DECODED.update(zip(words, ins))


def function_body(asm, name):
    """instruction and label lines of function `name` (C or C++-mangled) in clang's assembly"""
    lines = asm.splitlines()
    start = None
    for i, ln in enumerate(lines):
        m = re.match(r"^([A-Za-z0-9_.$]+):", ln)
        if m and (m.group(1) == name or (m.group(1).startswith("_Z") and re.search(r"\d" + re.escape(name) + r"[A-Z]", m.group(1)))):
            start = i + 1
            break
    if start is None:
        return None
    body = []
    for ln in lines[start:]:
        if re.match(r"^\.Lfunc_end\d+:", ln):
            break
        ln = ln.split("//")[0].rstrip()
        m = re.match(r"^\s*\.inst\s+(0x[0-9a-fA-F]+)\s*$", ln)
        if m:  # an instruction spelled as its encoding in inline assembly (llama.cpp's sdot / smmla)
            ln = "\t" + INST_DECODED.get(int(m.group(1), 16), ".inst " + m.group(1))
        if not ln.strip() or ln.strip().startswith(".") and not re.match(r"^\.L[A-Za-z0-9_]+:", ln):
            continue
        body.append(ln)
    return body


def hot_loop(body, want_mmla):
    """the instructions of the innermost loop with the most multiply instructions"""
    labels = {}
    loops = []
    for i, ln in enumerate(body):
        m = re.match(r"^\s*(\.L[A-Za-z0-9_]+|\d+):", ln)  # numeric: local labels of inline assembly
        if m:
            labels[m.group(1)] = i
            continue
        m = re.search(r"\b(b\.?\w*|cbn?z|tbn?z)\s+(.*,\s*)?(\.L[A-Za-z0-9_]+|\d+b)\s*$", ln)
        if m:
            target = m.group(3)[:-1] if m.group(3).endswith("b") and m.group(3)[:-1].isdigit() else m.group(3)
            if target in labels and labels[target] < i:
                loops.append((labels[target], i))
    found = []
    for a, b in loops:
        ins = [ln for ln in body[a + 1:b + 1] if not re.match(r"^\s*(\.L[A-Za-z0-9_]+|\d+):", ln)]
        n = sum(macs(ln) for ln in ins)
        has_mmla = any(re.match(r"^\s*(s|u|us)mmla\s", ln) for ln in ins)
        if n and (want_mmla is None or has_mmla == want_mmla):
            found.append((a, b, n, ins))
    inner = [f for f in found if not any(g is not f and f[0] <= g[0] and g[1] <= f[1] for g in found)]
    if not inner:
        return None, 0
    best = max(inner, key=lambda f: f[2])
    return best[3], best[2]


def mca_cycles(mca, cpu, instructions):
    text = "\n".join(instructions) + "\n"
    r = subprocess.run([mca, "-mtriple=aarch64-linux-gnu", f"-mcpu={cpu}", "-mattr=+dotprod,+i8mm,+fullfp16,+bf16",
                        "-iterations=200"], input=text, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "llvm-mca failed")
    if "not a recognized processor" in r.stderr:
        raise RuntimeError(f"{mca} has no model of {cpu}")
    m = re.search(r"\[0\]\s+-\s+([A-Za-z0-9]+?)Unit", r.stdout)
    if m:
        MODELS[cpu] = m.group(1)
    it = int(re.search(r"Iterations:\s+(\d+)", r.stdout).group(1))
    cyc = int(re.search(r"Total Cycles:\s+(\d+)", r.stdout).group(1))
    return cyc / it


def compile_asm(cmd, src, out):
    subprocess.run(cmd + ["-S", src, "-o", out], check=True)
    with open(out) as f:
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama", default=os.environ.get("LEAP_LLAMA_CPP_DIR"),
                    help="llama.cpp's source directory (the one holding ggml/); or $LEAP_LLAMA_CPP_DIR")
    ap.add_argument("--mca", default=shutil.which("llvm-mca-15") or "/usr/lib/llvm-15/bin/llvm-mca")
    ap.add_argument("--clang", default="clang")
    ap.add_argument("--cpus", default=",".join(CPUS))
    args = ap.parse_args()
    if not args.llama or not os.path.isdir(os.path.join(args.llama, "ggml")):
        sys.exit("need --llama <llama.cpp source directory> (or $LEAP_LLAMA_CPP_DIR)")
    cross = [args.clang, "--target=aarch64-linux-gnu", f"--sysroot={SYSROOT}", "-O3", "-fno-math-errno", "-DNDEBUG"]
    ggml = os.path.join(args.llama, "ggml")
    ggml_inc = ["-I" + os.path.join(ggml, "include"), "-I" + os.path.join(ggml, "src"),
                "-I" + os.path.join(ggml, "src", "ggml-cpu")]
    # repack.cpp is C++: the host's libstdc++ headers serve for assembly output (no aarch64 libstdc++ needed)
    cxx_inc = ["-std=c++17", "-isystem", "/usr/include/c++/12", "-isystem", "/usr/include/x86_64-linux-gnu/c++/12"]
    cpus = [c for c in args.cpus.split(",") if c]
    levels = {CPUS[c][0]: CPUS[c][1] for c in cpus}
    asm = {}
    with tempfile.TemporaryDirectory() as tmp:
        ours_cmd = cross + ["-march=armv8-a", "-I" + os.path.join(KERNELS, "include"), "-I" + KERNELS]
        asm["ours-dotprod"] = compile_asm(ours_cmd, os.path.join(KERNELS, "arm", "dotprod", "quant_rows.c"), f"{tmp}/d.s")
        asm["ours-lowk"] = compile_asm(ours_cmd, os.path.join(KERNELS, "arm", "dotprod", "low_bit_kquants.c"), f"{tmp}/k.s")
        asm["ours-i8mm"] = compile_asm(ours_cmd, os.path.join(KERNELS, "arm", "i8mm.c"), f"{tmp}/i.s")
        asm["ours-rows8"] = compile_asm(ours_cmd, os.path.join(KERNELS, "arm", "rows8.c"), f"{tmp}/r.s")
        asm["ours-rows8-kquant"] = compile_asm(ours_cmd, os.path.join(KERNELS, "arm", "rows8_kquant.c"), f"{tmp}/rk.s")
        asm["ours-i8mm-kquant"] = compile_asm(ours_cmd, os.path.join(KERNELS, "arm", "i8mm_kquant.c"), f"{tmp}/ik.s")
        arm = os.path.join(ggml, "src", "ggml-cpu", "arch", "arm")
        for level, march in levels.items():
            asm["llama-quants-" + level] = compile_asm(cross + [f"-march={march}"] + ggml_inc,
                                                       os.path.join(arm, "quants.c"), f"{tmp}/lq-{level}.s")
            asm["llama-repack-" + level] = compile_asm([args.clang + "++"] + cross[1:] + [f"-march={march}"] + ggml_inc + cxx_inc,
                                                       os.path.join(arm, "repack.cpp"), f"{tmp}/lr-{level}.s")

    mc = os.path.join(os.path.dirname(os.path.realpath(args.mca)), "llvm-mc")
    for text in asm.values():
        decode_inst_words(mc, text)

    def estimate(key, fn, want_mmla, cpu):
        body = function_body(asm[key], fn)
        if body is None:
            return None, f"{fn}: not found"
        loop, n = hot_loop(body, want_mmla)
        if not loop and want_mmla:  # no smmla kernel of this type: its one-token loop, token after token
            loop, n = hot_loop(body, False)
        if not loop:
            return None, f"{fn}: no loop with integer products"
        return mca_cycles(args.mca, cpu, loop) * 256 / n, None

    print("Static estimates (llvm-mca, no memory): cycles per 256 weights per token; ratio = llama.cpp / ours "
          "(above 1: ours fewer cycles)")
    notes = []
    for cpu in list(cpus):
        try:
            mca_cycles(args.mca, cpu, ["add x0, x0, #1"])
        except RuntimeError as e:
            notes.append(f"{cpu} skipped: {e}")
            cpus.remove(cpu)
    for cpu in cpus:
        level = CPUS[cpu][0]
        print(f"\n{cpu} ({level} kernels; llvm-mca's {MODELS.get(cpu, 'own')} scheduling model)")
        print(f"  {'type':6} {'phase':7} {'ours':>8} {'llama.cpp':>10} {'ratio':>6}")
        for t in TYPES:
            for phase in PHASES:
                a, ea = estimate(*ours(t, phase, level), cpu)
                b, eb = estimate(*llama(t, phase, level), cpu)
                for e in (ea, eb):
                    if e and e not in notes:
                        notes.append(e)
                fa = f"{a:8.1f}" if a else f"{'-':>8}"
                fb = f"{b:10.1f}" if b else f"{'-':>10}"
                ratio = f"{b / a:6.2f}" if a and b else f"{'-':>6}"
                print(f"  {t:6} {phase:7} {fa} {fb} {ratio}")
    for n in notes:
        print("note:", n)


if __name__ == "__main__":
    main()
