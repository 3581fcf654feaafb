#!/usr/bin/env bash
# include/leap.h compiles on its own as C89/C99/C11 and C++11/17 with gcc and clang, warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
compilers="gcc"
command -v clang > /dev/null && compilers="$compilers clang"
for cc in $compilers; do
    for std in c89 c99 c11; do
        "$cc" -std=$std -pedantic -Wall -Wextra -Wstrict-prototypes -Werror -fsyntax-only -x c include/leap.h
    done
    cxx=g++
    [ "$cc" = clang ] && cxx=clang++
    for std in c++11 c++17; do
        "$cxx" -std=$std -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++ include/leap.h
    done
done
echo "leap.h compiles as C89/C99/C11 and C++11/C++17 with: $compilers"
