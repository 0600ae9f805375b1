"""Mergeability grading: rubric checks, a fenced diff-only judge, outcomes and admission.

This package never imports Django (tests/grading/test_no_django.py proves it).
"""

__version__ = "0.1.0"
