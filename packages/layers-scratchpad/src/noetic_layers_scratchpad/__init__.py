"""The scratchpad context layer for Noetic."""
