"""Function-based views of the rubric pages; one module per area."""
