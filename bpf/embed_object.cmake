# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# cmake -DINPUT=<file> -DOUTPUT=<file.c> -DSYMBOL=<name> -P embed_object.cmake
# Writes <file.c> defining <name>_data (the bytes of <file>) and <name>_size.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  "
       bytes "${bytes}")
file(WRITE "${OUTPUT}"
  "/* Generated from ${INPUT} by bpf/embed_object.cmake; do not edit. */\n"
  "const unsigned char ${SYMBOL}_data[] __attribute__((aligned(8))) = {\n  ${bytes}\n};\n"
  "const unsigned long ${SYMBOL}_size = ${size};\n")
