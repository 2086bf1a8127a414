"""Root test configuration: Qt always runs offscreen (without a display Qt aborts the interpreter)."""

from __future__ import annotations

import os

# Imported now, not lazily by hypothesis's pytest plugin at session end: on CPython 3.11 the AST constructor's
# recursion bookkeeping is shared between threads (fixed in later CPython), and a late import that pytest
# rewrites (ast.parse) while a test's helper thread winds down can fail with "AST constructor recursion depth
# mismatch".
import hypothesis  # noqa: F401

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
