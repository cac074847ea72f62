"""The OpenRouter model adapter for Noetic."""
