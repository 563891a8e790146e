"""The read-only explorer: pages, fragments and keyset pagination."""
