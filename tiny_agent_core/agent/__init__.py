"""The agent: the streamed run loop, tool execution behind the approval policy, cancel, recovery, compaction."""
