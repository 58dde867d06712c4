"""The worlds stores are made of: synthetic users with planted relevance, text embedders, and LoCoMo conversations as stores."""
