"""The Noetic test kit: a scripted model and reusable conformance suites for plugin authors."""

from noetic.testing.scripted import ScriptedModel, ScriptedReply, text_reply, tool_call_reply

__all__ = ["ScriptedModel", "ScriptedReply", "text_reply", "tool_call_reply"]
