#!/usr/bin/env python3
"""Layering check: fails on an import cycle between modules or a reference cycle between folders.

Modules are the folders under Sources/ (SwiftPM targets); their edges are `import X` lines naming
another module of the package. Folders are the directories that directly hold .swift files
(`Gateway`, `Gateway/Engine`, …); a folder depends on another folder *of the same module* when its
code names a type declared at the top level of that folder. Comments and string literals are
stripped first, so a name in a comment or a message makes no edge. A type name declared in two
folders of one module makes no edge and is listed as a warning (`--strict` fails on it).

Usage: check-layering.py [--root DIR] [--strict] [--dot]
"""
import os
import re
import sys
from collections import defaultdict

DECL = re.compile(r'^(?:(?:public|internal|private|fileprivate|package|open|final|indirect|@[\w()".: ]+)\s+)*'
                  r'(?:struct|class|enum|protocol|actor|typealias)\s+([A-Za-z_]\w*)')
IMPORT = re.compile(r'^\s*(?:@testable\s+|@_implementationOnly\s+|@preconcurrency\s+)?import\s+'
                    r'(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_]\w*)', re.M)
IDENT = re.compile(r'[A-Za-z_]\w*')


def strip(text):
    """Source with comments and string literals (also multi-line and raw ones) blanked out,
    newlines kept so line numbers stay right."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            i = j
        elif text.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith('/*', j): depth, j = depth + 1, j + 2
                elif text.startswith('*/', j): depth, j = depth - 1, j + 2
                else: j += 1
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == '"' or (c == '#' and re.match(r'#+"', text[i:])):
            hashes = len(re.match(r'#*', text[i:]).group(0))
            start = i
            i += hashes
            triple = text.startswith('"""', i)
            close = ('"""' if triple else '"') + '#' * hashes
            i += 3 if triple else 1
            while i < n:
                if hashes == 0 and text[i] == '\\':
                    i += 2; continue
                if text.startswith(close, i):
                    i += len(close); break
                if not triple and text[i] == '\n':
                    break
                i += 1
            out.append(re.sub(r'[^\n]', ' ', text[start:i]))
        else:
            out.append(c); i += 1
    return ''.join(out)


def top_level_decls(code):
    """Names declared at brace depth 0, with their 1-based lines."""
    names, depth = [], 0
    for lineno, line in enumerate(code.split('\n'), 1):
        if depth == 0:
            m = DECL.match(line.strip())
            if m: names.append((m.group(1), lineno))
        depth += line.count('{') - line.count('}')
        depth = max(depth, 0)
    return names


def scan(root):
    src = os.path.join(root, 'Sources')
    modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    files = {}  # path -> (module, folder, stripped code)
    for m in modules:
        for dirpath, _, names in os.walk(os.path.join(src, m)):
            for name in sorted(names):
                if name.endswith('.swift'):
                    p = os.path.join(dirpath, name)
                    folder = os.path.relpath(dirpath, src)
                    with open(p, encoding='utf-8', errors='replace') as f:
                        files[p] = (m, folder, strip(f.read()))
    return modules, files


def cycles(graph):
    """Elementary cycles found by DFS (each reported once, rotated to start at its least node)."""
    found, seen = [], set()
    def dfs(node, path, on_path):
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_path:
                cyc = path[path.index(nxt):]
                k = min(range(len(cyc)), key=lambda i: cyc[i])
                key = tuple(cyc[k:] + cyc[:k])
                if key not in seen:
                    seen.add(key); found.append(list(key))
            elif len(path) < 12:
                on_path.add(nxt); path.append(nxt)
                dfs(nxt, path, on_path)
                path.pop(); on_path.discard(nxt)
    for start in sorted(graph):
        dfs(start, [start], {start})
    return found


def check(root, strict=False, dot=False, out=sys.stdout):
    modules, files = scan(root)
    modset = set(modules)
    mod_edges, mod_example = defaultdict(set), {}
    for p, (m, _, code) in files.items():
        for mm in IMPORT.finditer(code):
            dep = mm.group(1)
            if dep in modset and dep != m:
                mod_edges[m].add(dep)
                mod_example.setdefault((m, dep), f'{os.path.relpath(p, root)}:{code[:mm.start()].count(chr(10)) + 1}: import {dep}')
    # Folder-level: declarations per folder, per module.
    decl_at = defaultdict(dict)  # module -> name -> folder (None when declared in two folders)
    dupes = []
    for p, (m, folder, code) in sorted(files.items()):
        for name, line in top_level_decls(code):
            prev = decl_at[m].get(name, 'unset')
            if prev == 'unset':
                decl_at[m][name] = folder
            elif prev is not None and prev != folder:
                a, b = sorted([prev, folder])
                dupes.append(f'{m}: type {name} is declared in {a} and in {b}')
                decl_at[m][name] = None
    fold_edges, fold_example = defaultdict(set), {}
    for p, (m, folder, code) in files.items():
        table = decl_at[m]
        for lineno, line in enumerate(code.split('\n'), 1):
            for ident in IDENT.findall(line):
                other = table.get(ident)
                if other and other != folder:
                    fold_edges[folder].add(other)
                    fold_example.setdefault((folder, other), f'{os.path.relpath(p, root)}:{lineno}: {ident}')
    folders = sorted({f for _, f, _ in files.values()})
    if dot:
        print('digraph layering {', file=out)
        for a in sorted(fold_edges):
            for b in sorted(fold_edges[a]): print(f'  "{a}" -> "{b}";', file=out)
        for a in sorted(mod_edges):
            for b in sorted(mod_edges[a]): print(f'  "{a}" -> "{b}" [style=bold];', file=out)
        print('}', file=out)
        return 0
    bad = 0
    for cyc in cycles(mod_edges):
        bad += 1
        print('module cycle: ' + ' -> '.join(cyc + [cyc[0]]), file=out)
        for a, b in zip(cyc, cyc[1:] + [cyc[0]]): print(f'  {mod_example[(a, b)]}', file=out)
    for cyc in cycles(fold_edges):
        bad += 1
        print('folder cycle: ' + ' -> '.join(cyc + [cyc[0]]), file=out)
        for a, b in zip(cyc, cyc[1:] + [cyc[0]]): print(f'  {fold_example[(a, b)]}', file=out)
    for d in sorted(set(dupes)):
        print(f'warning: {d}', file=out)
    if strict and dupes:
        bad += 1
    if bad:
        return 1
    print(f'layering: {len(modules)} modules, {len(folders)} folders, no cycles', file=out)
    return 0


def main(argv):
    root, strict, dot = '.', False, False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == '--root': root = argv[i + 1]; i += 1
        elif a == '--strict': strict = True
        elif a == '--dot': dot = True
        elif a in ('-h', '--help'): print(__doc__); return 0
        else: print(f'check-layering: unknown argument {a!r}\n{__doc__}', file=sys.stderr); return 2
        i += 1
    return check(root, strict, dot)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
