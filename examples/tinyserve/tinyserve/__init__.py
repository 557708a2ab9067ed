"""tinyserve: a small set of LLM serving layers, kbot's bundled example target repo."""

__version__ = "0.1.0"
