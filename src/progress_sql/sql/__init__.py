"""SQL text handling: the single parsing entry point, lexical similarity and extraction."""
