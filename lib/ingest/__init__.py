"""Getting harness files into the store: formats, discovery, one-transaction import, uploads, the sample."""
