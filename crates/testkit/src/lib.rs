//! Test doubles for TrueForge.
//!
//! [`fake_llm`]: a fake model server speaking the OpenAI Responses, Chat Completions, Anthropic Messages and
//! Gemini streaming wire formats, scripted or driven by directives, recording every request. Also the
//! `fake-llm` binary.

pub mod fake_llm;
