#!/usr/bin/env bash
# Prints a pkg-config file for a libleap installed under PREFIX ($1).
prefix=$1
ver=$(sed -n 's/^#define LEAP_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$(dirname "$0")/../include/leap.h" | paste -sd.)
cat <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: leap
Description: On-device LLM SDK (LEAP conversation API over GGUF models)
Version: $ver
Libs: -L\${libdir} -lleap
Cflags: -I\${includedir}
PC
