"""Filesystem adapters for Noetic backed by fsspec."""
