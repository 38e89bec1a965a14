"""Reading and writing files: atomic outputs, lines of compressed text, Parquet tables,
JSON and YAML files. One implementation of each, used by every stage."""
