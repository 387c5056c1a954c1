"""Clients of outside model services (HTTP lives here, never in worker.core): ``openai_chat`` speaks the
OpenAI chat-completions API and satisfies ``worker.core.skillmix.chat.ChatModel``."""
