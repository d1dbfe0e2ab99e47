//! The rule-driven answers (nothing queued): `#directives` in the last user message, per wire format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Answer, answer, ask, body, events, has_end_marker, model, post, url, with_tool_round, with_tools};
use serde_json::json;
use trueforge_testkit::fake_llm::{Api, DEFAULT_TEXT, FakeLlm};

macro_rules! per_format {
    ($check:ident: $($name:ident => $api:expr),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                $check($api).await;
            }
        )+
    };
}

fn text(text: &str) -> Answer {
    Answer {
        text: text.to_owned(),
        ..Answer::default()
    }
}

async fn steps_call_a_tool_until_enough_results(api: Api) {
    let server = FakeLlm::start().await;
    let target = url(&server, api, model(api));
    let first = with_tools(api, body(api, "Look it up #steps=2"), &["lookup", "other"]);
    let second = with_tool_round(api, first.clone(), 1);
    let third = with_tool_round(api, second.clone(), 2);

    let call_one = answer(api, &post(&target, &first).await.body);
    let call_two = answer(api, &post(&target, &second).await.body);
    let done = post(&target, &third).await;

    let expected_call = Answer {
        calls: vec![("lookup".to_owned(), json!({}))],
        ..Answer::default()
    };
    assert_eq!(call_one, expected_call);
    assert_eq!(call_two, expected_call);
    assert_eq!(answer(api, &done.body), text("Done after 2 tool results."));
    assert!(has_end_marker(api, &done.body));
}

per_format!(steps_call_a_tool_until_enough_results:
    chat_rules_steps_make_tool_calls_then_answer => Api::Chat,
    responses_rules_steps_make_tool_calls_then_answer => Api::Responses,
    anthropic_rules_steps_make_tool_calls_then_answer => Api::Anthropic,
    gemini_rules_steps_make_tool_calls_then_answer => Api::Gemini,
);

async fn directives_choose_tool_arguments_and_parallel_calls(api: Api) {
    let server = FakeLlm::start().await;
    let request = with_tools(
        api,
        body(api, r#"go #steps=1 #tool=search #args={"q":"rust"} #parallel=2"#),
        &["lookup", "search"],
    );

    let reply = post(&url(&server, api, model(api)), &request).await;

    let call = ("search".to_owned(), json!({"q": "rust"}));
    assert_eq!(answer(api, &reply.body).calls, [call.clone(), call]);
}

per_format!(directives_choose_tool_arguments_and_parallel_calls:
    chat_rules_tool_calls_follow_tool_args_and_parallel => Api::Chat,
    responses_rules_tool_calls_follow_tool_args_and_parallel => Api::Responses,
    anthropic_rules_tool_calls_follow_tool_args_and_parallel => Api::Anthropic,
    gemini_rules_tool_calls_follow_tool_args_and_parallel => Api::Gemini,
);

async fn echo_chunks_and_reasoning(api: Api) {
    let server = FakeLlm::start().await;
    let prompt = "repeat me #echo #chunks=4 #reasoning";

    let reply = ask(&server, api, prompt).await;

    let answer = answer(api, &reply.body);
    assert_eq!(answer.text, prompt);
    assert_eq!(answer.reasoning, "Thinking about the request.");
    let chars: Vec<char> = prompt.chars().collect();
    for piece in chars.chunks(chars.len() / 4) {
        let piece: String = piece.iter().collect();
        assert!(
            reply.body.contains(&format!("\"{piece}\"")),
            "no chunk {piece:?} in {}",
            reply.body
        );
    }
}

per_format!(echo_chunks_and_reasoning:
    chat_rules_echo_text_in_chunks_with_reasoning => Api::Chat,
    responses_rules_echo_text_in_chunks_with_reasoning => Api::Responses,
    anthropic_rules_echo_text_in_chunks_with_reasoning => Api::Anthropic,
    gemini_rules_echo_text_in_chunks_with_reasoning => Api::Gemini,
);

async fn default_answer_and_ignored_directives(api: Api) {
    let server = FakeLlm::start().await;

    let plain = ask(&server, api, "hello").await;
    let malformed = ask(
        &server,
        api,
        "#steps=many #error=abc #chunks=x #cut=y #unknown #error=42",
    )
    .await;

    assert_eq!(answer(api, &plain.body), text(DEFAULT_TEXT));
    assert_eq!(malformed.status, 200);
    assert_eq!(answer(api, &malformed.body), text(DEFAULT_TEXT));
    assert!(has_end_marker(api, &malformed.body));
}

per_format!(default_answer_and_ignored_directives:
    chat_rules_default_text_and_bad_directives_ignored => Api::Chat,
    responses_rules_default_text_and_bad_directives_ignored => Api::Responses,
    anthropic_rules_default_text_and_bad_directives_ignored => Api::Anthropic,
    gemini_rules_default_text_and_bad_directives_ignored => Api::Gemini,
);

async fn error_directive_fails_then_recovers(api: Api) {
    let server = FakeLlm::start().await;

    let always = ask(&server, api, "#error=500").await;
    let first = ask(&server, api, "retry me #error=429*1 #retry_after=2").await;
    let second = ask(&server, api, "retry me #error=429*1 #retry_after=2").await;

    assert_eq!(always.status, 500);
    assert_eq!(first.status, 429);
    assert_eq!(first.header("retry-after"), Some("2"));
    assert_eq!(second.status, 200);
    assert!(has_end_marker(api, &second.body));
}

per_format!(error_directive_fails_then_recovers:
    chat_rules_error_then_retry_succeeds => Api::Chat,
    responses_rules_error_then_retry_succeeds => Api::Responses,
    anthropic_rules_error_then_retry_succeeds => Api::Anthropic,
    gemini_rules_error_then_retry_succeeds => Api::Gemini,
);

async fn cut_and_finish_directives(api: Api) {
    let server = FakeLlm::start().await;

    let cut = ask(&server, api, "#cut=1 #chunks=3").await;
    let length = ask(&server, api, "#finish=length").await;

    assert_eq!(events(api, &cut.body).len(), 1);
    assert!(!has_end_marker(api, &cut.body));
    let marker = match api {
        Api::Chat => r#""finish_reason":"length""#,
        Api::Responses => "response.incomplete",
        Api::Anthropic => r#""stop_reason":"max_tokens""#,
        Api::Gemini => r#""finishReason": "MAX_TOKENS""#,
    };
    assert!(length.body.contains(marker), "{}", length.body);
}

per_format!(cut_and_finish_directives:
    chat_rules_cut_and_length_finish => Api::Chat,
    responses_rules_cut_and_length_finish => Api::Responses,
    anthropic_rules_cut_and_length_finish => Api::Anthropic,
    gemini_rules_cut_and_length_finish => Api::Gemini,
);

#[tokio::test]
async fn anthropic_rules_delay_postpones_the_answer() {
    let server = FakeLlm::start().await;

    let started = std::time::Instant::now();
    let reply = ask(&server, Api::Anthropic, "#delay=30").await;

    let gaps = events(Api::Anthropic, &reply.body).len() as u32 - 1;
    assert!(started.elapsed() >= std::time::Duration::from_millis(30) * (gaps + 1));
}

#[tokio::test]
async fn chat_rules_steps_without_tools_answer_at_once() {
    let server = FakeLlm::start().await;

    let reply = ask(&server, Api::Chat, "#steps=3").await;

    assert_eq!(answer(Api::Chat, &reply.body), text("Done after 0 tool results."));
}

#[tokio::test]
async fn responses_rules_read_a_plain_string_input() {
    let server = FakeLlm::start().await;
    let request = json!({"model": "gpt-test", "stream": true, "input": "say this #echo"});

    let reply = post(&url(&server, Api::Responses, "gpt-test"), &request).await;

    assert_eq!(answer(Api::Responses, &reply.body).text, "say this #echo");
}

#[tokio::test]
async fn anthropic_rules_take_directives_from_the_last_user_text_not_tool_results() {
    let server = FakeLlm::start().await;
    let mut request = with_tools(Api::Anthropic, body(Api::Anthropic, "old #echo"), &["lookup"]);
    request["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": "ok"}));
    request["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": [{"type": "text", "text": "new #steps=1"}]}));
    let request = with_tool_round(Api::Anthropic, request, 1);

    let reply = post(&url(&server, Api::Anthropic, "claude-test"), &request).await;

    assert_eq!(answer(Api::Anthropic, &reply.body), text("Done after 1 tool results."));
}
