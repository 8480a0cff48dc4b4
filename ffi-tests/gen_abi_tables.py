#!/usr/bin/env python3
"""Regenerates the ABI tables of ffi-tests/golden/abi/ from the reference's
headers (llama.cpp 0c1e570, as vendored by llama-cpp-python 0.3.36:
scripts/fetch-reference-src.sh fetches it) and its libllama.so.

Usage: gen_abi_tables.py REF_LLAMA_CPP_DIR OUT_DIR [--lib LIBLLAMA.so] [--against INCLUDE_DIR]

- layout.tsv: every struct of llama.h that has a body, in header order: its
  sizeof/alignof, then every field's offsetof/sizeof (the fields of an
  anonymous union listed one by one, at the union's offset).
- enums.tsv: every enumerator of llama.h's enums, in header order, then of
  ggml_type, ggml_log_level (ggml.h) and ggml_numa_strategy (ggml-cpu.h).
- symbols.txt (with --lib): the llama_* functions the library exports.
The names come from parsing the headers; the numbers from a C program that
the host compiler builds against them (gcc, x86-64 Linux for the committed
tables). --against INCLUDE_DIR builds that program against another llama.h
(e.g. minfer's include/): with the reference's names and minfer's numbers,
the output equals the committed tables when the two ABIs agree.
"""
import os, re, subprocess, sys, tempfile

def strip(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    return '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))

def body_at(text, i):
    """text[i] == '{': returns (body, index after the matching '}')."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == '{':
            depth += 1
        elif text[j] == '}':
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
    raise ValueError('unbalanced braces')

def split_top(body):
    """The declarations of a struct body: split at ';' outside braces."""
    out, depth, cur = [], 0, ''
    for c in body:
        if c == '{': depth += 1
        if c == '}': depth -= 1
        if c == ';' and depth == 0:
            out.append(cur.strip()); cur = ''
        else:
            cur += c
    return [d for d in out if d]

def field_names(body):
    names = []
    for decl in split_top(body):
        if re.match(r'union\s*\{', decl):
            inner, _ = body_at(decl, decl.index('{'))
            names += field_names(inner)
            continue
        m = re.search(r'\(\s*\*\s*(\w+)\s*\)', decl)  # function pointer
        if m:
            names.append(m.group(1)); continue
        decl = re.sub(r'\[[^\]]*\]', '', decl)  # arrays
        names.append(re.findall(r'\w+', decl)[-1])
    return names

def structs(text):
    for m in re.finditer(r'struct\s+(llama_\w+)\s*\{', text):
        body, _ = body_at(text, m.end() - 1)
        yield m.group(1), field_names(body)

def enums(text, names=None):
    for m in re.finditer(r'enum\s+(\w+)\s*\{', text):
        if names is not None and m.group(1) not in names:
            continue
        body, _ = body_at(text, m.end() - 1)
        items = [re.match(r'\s*(\w+)', e).group(1) for e in body.split(',') if e.strip()]
        yield m.group(1), items

def main():
    args = sys.argv[1:]
    opt = lambda k: args[args.index(k) + 1] if k in args else None
    lib, against = opt('--lib'), opt('--against')
    ref, out = args[0], args[1]
    inc = os.path.join(ref, 'include')
    ggml_inc = os.path.join(ref, 'ggml', 'include')
    llama_h = strip(open(os.path.join(inc, 'llama.h')).read())
    ggml_h = strip(open(os.path.join(ggml_inc, 'ggml.h')).read())
    cpu_h = strip(open(os.path.join(ggml_inc, 'ggml-cpu.h')).read())

    c = ['#include <stddef.h>', '#include <stdio.h>', '#include "llama.h"',
         '#define S(t) printf("%s\\tstruct\\t%zu\\t%zu\\n", #t, sizeof(struct t), _Alignof(struct t));',
         '#define F(t, f) printf("%s.%s\\tfield\\t%zu\\t%zu\\n", #t, #f, offsetof(struct t, f), sizeof(((struct t *) 0)->f));',
         '#define E(e, v) printf("%s\\t%s\\t%lld\\n", #e, #v, (long long) (v));',
         'int main(void) {',
         '    printf("# name\\tkind\\ta\\tb   (kind=struct: a=sizeof, b=alignof; kind=field: a=offsetof, b=sizeof)\\n");']
    for name, fields in structs(llama_h):
        c.append(f'    S({name})')
        c += [f'    F({name}, {f})' for f in fields]
    c.append('    printf("--- enums\\n");')
    c.append('    printf("# enum\\tenumerator\\tvalue\\n");')
    all_enums = list(enums(llama_h)) + list(enums(ggml_h, {'ggml_type', 'ggml_log_level'})) \
        + list(enums(cpu_h, {'ggml_numa_strategy'}))
    for name, items in all_enums:
        c += [f'    E({name}, {v})' for v in items]
    c += ['    return 0;', '}']
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, 'abi.c'), os.path.join(tmp, 'abi')
        open(src, 'w').write('\n'.join(c) + '\n')
        includes = ['-I', against] if against else ['-I', inc, '-I', ggml_inc]
        if against is None and 'ggml_numa_strategy' in cpu_h:
            includes += ['-include', 'ggml-cpu.h']
        subprocess.run(['gcc', '-std=c11', *includes, src, '-o', exe], check=True)
        text = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    layout, enum_rows = text.split('--- enums\n')
    open(os.path.join(out, 'layout.tsv'), 'w').write(layout)
    open(os.path.join(out, 'enums.tsv'), 'w').write(enum_rows)
    if lib:
        nm = subprocess.run(['nm', '-D', '--defined-only', lib], check=True, capture_output=True, text=True).stdout
        syms = sorted({l.split()[-1] for l in nm.splitlines() if l.split()[-1].startswith('llama_')
                       and l.split()[1] in 'TW'}, key=lambda s: s.encode())
        open(os.path.join(out, 'symbols.txt'), 'w').write(''.join(s + '\n' for s in syms))

main()
