"""Hostile inputs for the diff renderer: shared by the rendering and size tests."""

from __future__ import annotations

# The issue's input: one 390 KB JavaScript line on which pygments' lexer is quadratic (120 s to highlight).
LONG_JS_LINE = '/*"\\\\' * 78_000
