// LeapKernels: quantized matvec/matmul, norms, RoPE, activations and the thread pool (issue 4).
import CLeapKernels
