//! OpenAI Responses: `event: <type>` frames with a `sequence_number`, one output item per reasoning block,
//! message and function call, ending with `response.completed` (or `.incomplete` / `.failed`).

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::fake_llm::plan::Plan;
use crate::fake_llm::script::ScriptedFinish;
use crate::fake_llm::sse::named_frame;

mod object;

use object::{Item, ResponseObject, SummaryPart, TextPart};

#[derive(Serialize)]
struct Event<'a, T: Serialize> {
    #[serde(rename = "type")]
    kind: &'a str,
    sequence_number: u64,
    #[serde(flatten)]
    body: T,
}

#[derive(Serialize)]
struct ResponseBody<'a> {
    response: &'a ResponseObject,
}

#[derive(Serialize)]
struct ItemBody<'a> {
    output_index: usize,
    item: &'a Item,
}

#[derive(Serialize)]
struct ContentPartBody<'a> {
    item_id: &'a str,
    output_index: usize,
    content_index: usize,
    part: &'a TextPart,
}

#[derive(Serialize)]
struct TextBody<'a> {
    item_id: &'a str,
    output_index: usize,
    content_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

#[derive(Serialize)]
struct SummaryPartBody<'a> {
    item_id: &'a str,
    output_index: usize,
    summary_index: usize,
    part: &'a SummaryPart,
}

#[derive(Serialize)]
struct SummaryTextBody<'a> {
    item_id: &'a str,
    output_index: usize,
    summary_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
}

#[derive(Serialize)]
struct ArgumentsBody<'a> {
    item_id: &'a str,
    output_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a str>,
}

/// Collects frames and numbers them.
struct Frames {
    frames: Vec<Bytes>,
}

impl Frames {
    fn push(&mut self, kind: &str, body: impl Serialize) {
        let sequence_number = self.frames.len() as u64;
        self.frames.push(named_frame(
            kind,
            &Event {
                kind,
                sequence_number,
                body,
            },
        ));
    }
}

/// The default call id of the `index`-th function call of request `seq`.
pub(crate) fn call_id(seq: usize, index: usize) -> String {
    format!("call_fake_{seq}_{index}")
}

pub(crate) fn stream(plan: &Plan, request: &Value) -> Vec<Bytes> {
    let mut response = ResponseObject::new(plan, request);
    let mut out = Frames { frames: Vec::new() };
    out.push("response.created", ResponseBody { response: &response });
    out.push("response.in_progress", ResponseBody { response: &response });

    let mut items = Vec::new();
    if let Some(reasoning) = &plan.reasoning {
        let output_index = items.len();
        let id = format!("rs_fake_{}_{output_index}", plan.seq);
        let added = Item::Reasoning {
            id: id.clone(),
            kind: "reasoning",
            encrypted_content: reasoning.signature.clone(),
            summary: Vec::new(),
        };
        out.push(
            "response.output_item.added",
            ItemBody {
                output_index,
                item: &added,
            },
        );
        let empty = SummaryPart::summary_text("");
        let full = SummaryPart::summary_text(&reasoning.text);
        let summary = |delta, text| SummaryTextBody {
            item_id: &id,
            output_index,
            summary_index: 0,
            delta,
            text,
        };
        let part = |part| SummaryPartBody {
            item_id: &id,
            output_index,
            summary_index: 0,
            part,
        };
        out.push("response.reasoning_summary_part.added", part(&empty));
        for piece in &reasoning.chunks {
            out.push("response.reasoning_summary_text.delta", summary(Some(piece), None));
        }
        out.push(
            "response.reasoning_summary_text.done",
            summary(None, Some(&reasoning.text)),
        );
        out.push("response.reasoning_summary_part.done", part(&full));
        let done = Item::Reasoning {
            id: id.clone(),
            kind: "reasoning",
            encrypted_content: reasoning.signature.clone(),
            summary: vec![full.clone()],
        };
        out.push(
            "response.output_item.done",
            ItemBody {
                output_index,
                item: &done,
            },
        );
        items.push(done);
    }
    if !plan.text.is_empty() {
        let output_index = items.len();
        let id = format!("msg_fake_{}_{output_index}", plan.seq);
        let message = |status, content| Item::Message {
            id: id.clone(),
            kind: "message",
            status,
            content,
            role: "assistant",
        };
        out.push(
            "response.output_item.added",
            ItemBody {
                output_index,
                item: &message("in_progress", Vec::new()),
            },
        );
        let part_body = |part| ContentPartBody {
            item_id: &id,
            output_index,
            content_index: 0,
            part,
        };
        let text_body = |delta, text| TextBody {
            item_id: &id,
            output_index,
            content_index: 0,
            delta,
            text,
        };
        let (empty, full) = (TextPart::output_text(""), TextPart::output_text(&plan.text));
        out.push("response.content_part.added", part_body(&empty));
        for piece in &plan.text_chunks {
            out.push("response.output_text.delta", text_body(Some(piece), None));
        }
        out.push("response.output_text.done", text_body(None, Some(&plan.text)));
        out.push("response.content_part.done", part_body(&full));
        let status = match plan.finish {
            ScriptedFinish::Length | ScriptedFinish::ContentFilter => "incomplete",
            ScriptedFinish::Stop | ScriptedFinish::ToolCalls => "completed",
        };
        let done = message(status, vec![full.clone()]);
        out.push(
            "response.output_item.done",
            ItemBody {
                output_index,
                item: &done,
            },
        );
        items.push(done);
    }
    for (index, call) in plan.tool_calls.iter().enumerate() {
        let output_index = items.len();
        let id = format!("fc_fake_{}_{output_index}", plan.seq);
        let item = |status, arguments: &str| Item::FunctionCall {
            id: id.clone(),
            kind: "function_call",
            status,
            arguments: arguments.to_owned(),
            call_id: call.id.clone().unwrap_or_else(|| call_id(plan.seq, index)),
            name: call.name.clone(),
        };
        out.push(
            "response.output_item.added",
            ItemBody {
                output_index,
                item: &item("in_progress", ""),
            },
        );
        let arguments = |delta, arguments| ArgumentsBody {
            item_id: &id,
            output_index,
            delta,
            arguments,
        };
        for piece in &call.argument_chunks {
            out.push("response.function_call_arguments.delta", arguments(Some(piece), None));
        }
        out.push(
            "response.function_call_arguments.done",
            arguments(None, Some(&call.arguments)),
        );
        let done = item("completed", &call.arguments);
        out.push(
            "response.output_item.done",
            ItemBody {
                output_index,
                item: &done,
            },
        );
        items.push(done);
    }

    let terminal = response.conclude(plan, items);
    out.push(terminal, ResponseBody { response: &response });
    out.frames
}
