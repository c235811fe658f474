#!/usr/bin/env python3
"""Rewrites the findings table at the end of docs/pager.md from pager/src/finding.rs.

Each `Finding` variant's doc line becomes the meaning of its snake_case kind; section
comments (`// ---- Title ----`) become section rows. The test
`docs_list_every_finding_kind` fails when the table is out of date.
"""
import os
import re

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
src = open(os.path.join(root, "pager/src/finding.rs")).read()
enum = src[src.index("pub enum Finding {"):src.index("impl Finding {")]
rows = []
# A variant's doc is every `///` line just above it, joined (a doc of two lines once gave
# only its second).
for m in re.finditer(r"// ---- (.*?) ----|((?:    /// [^\n]*\n)+)    ([A-Z][A-Za-z]+) \{", enum):
    if m.group(1):
        rows.append(f"| **{m.group(1)}** | |")
        continue
    doc = " ".join(line.strip()[4:] for line in m.group(2).splitlines())
    kind = re.sub(r"(?<!^)([A-Z])", r"_\1", m.group(3)).lower()
    rows.append(f"| `{kind}` | {doc} |")
path = os.path.join(root, "docs/pager.md")
doc = open(path).read()
head = doc[:doc.index("| kind | meaning |")]
open(path, "w").write(head + "| kind | meaning |\n|---|---|\n" + "\n".join(rows) + "\n")
