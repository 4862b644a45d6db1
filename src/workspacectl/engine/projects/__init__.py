"""Projects (specialists): the record, grants, contents, files, workflows."""
