"""The outside chat APIs a kind may call (the Skill-Mix grader's and student's): ``openai_chat`` speaks the
OpenAI chat-completions API and satisfies ``worker.core.skillmix.chat.ChatModel``; ``outbound`` checks
every connection against the admin's policy. HTTP lives here, never in worker.core."""
