"""Error memory (lessons): filled in by the lessons issue."""
