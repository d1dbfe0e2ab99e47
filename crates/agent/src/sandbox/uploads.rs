//! Files a user sends with a message. Images and PDFs go to the model as they are; any other file is
//! written into the sandbox's uploads directory and the model is told where, in one announcement part.

use base64::Engine;
use bytes::Bytes;
use trueforge_protocol::{TurnInputItem, UserContentPart, UserMessage, UserMessageContent};
use trueforge_sandbox::join_sandbox_path;

use crate::error::InputError;

/// A file to write into the sandbox before the turn's first model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingUpload {
    pub path: String,
    pub content: Bytes,
}

/// Rewrites the user messages of `input` for the model: files that must live in the sandbox become one
/// announcement per message (after the message's inline files, before its text) and are returned to be
/// uploaded. `uploads_dir` is `None` when the agent has no sandbox: such a file is then refused.
pub fn stage_uploads(
    input: &[TurnInputItem],
    uploads_dir: Option<&str>,
    max_bytes: u64,
) -> Result<(Vec<TurnInputItem>, Vec<PendingUpload>), InputError> {
    let mut uploads = Vec::new();
    let mut staged = Vec::with_capacity(input.len());
    for item in input {
        match item {
            TurnInputItem::UserMessage(UserMessage {
                content: UserMessageContent::Parts(parts),
            }) if parts.iter().any(needs_sandbox) => {
                let parts = stage_message(parts, uploads_dir, max_bytes, &mut uploads)?;
                staged.push(TurnInputItem::UserMessage(UserMessage {
                    content: UserMessageContent::Parts(parts),
                }));
            }
            other => staged.push(other.clone()),
        }
    }
    Ok((staged, uploads))
}

fn needs_sandbox(part: &UserContentPart) -> bool {
    match part {
        UserContentPart::File { data, .. } => !goes_inline(media_type(data)),
        UserContentPart::Text { .. } => false,
    }
}

/// Images and PDFs are content every model adapter sends as it is.
fn goes_inline(media_type: &str) -> bool {
    media_type.starts_with("image/") || media_type == "application/pdf"
}

/// The media type of a data URI (`data:<type>[;params],<payload>`); empty when it is not one.
fn media_type(data: &str) -> &str {
    data.strip_prefix("data:")
        .and_then(|rest| rest.split([';', ',']).next())
        .unwrap_or("")
}

fn stage_message(
    parts: &[UserContentPart],
    uploads_dir: Option<&str>,
    max_bytes: u64,
    uploads: &mut Vec<PendingUpload>,
) -> Result<Vec<UserContentPart>, InputError> {
    let mut inline = Vec::new();
    let mut texts = Vec::new();
    let mut announced = Vec::new();
    for part in parts {
        match part {
            UserContentPart::File { name, data } if !goes_inline(media_type(data)) => {
                let Some(uploads_dir) = uploads_dir else {
                    return Err(InputError::SandboxRequired(name.clone()));
                };
                let upload = decode(name, data, uploads_dir, max_bytes)?;
                announced.push(Announced {
                    name: file_name(name).to_owned(),
                    path: upload.path.clone(),
                    media_type: media_type(data).to_owned(),
                    size: upload.content.len(),
                });
                uploads.push(upload);
            }
            UserContentPart::File { .. } => inline.push(part.clone()),
            UserContentPart::Text { .. } => texts.push(part.clone()),
        }
    }
    inline.push(UserContentPart::Text {
        text: announcement(&announced),
    });
    inline.extend(texts);
    Ok(inline)
}

struct Announced {
    name: String,
    path: String,
    media_type: String,
    size: usize,
}

/// The text the model reads about the uploaded files, in the reference's form.
fn announcement(files: &[Announced]) -> String {
    let mut text = format!("<tfy-internal>Uploaded files ({}):", files.len());
    for (index, file) in files.iter().enumerate() {
        text.push_str(&format!(
            "\n[file_{}]\n  filename: {}\n  path: {}\n  mime: {}\n  size: {} bytes",
            index + 1,
            file.name,
            file.path,
            file.media_type,
            file.size
        ));
    }
    text.push_str("\n</tfy-internal>");
    text
}

/// The name as the user gave it, without a leading `/`.
fn file_name(name: &str) -> &str {
    name.trim_start_matches('/')
}

fn decode(name: &str, data: &str, uploads_dir: &str, max_bytes: u64) -> Result<PendingUpload, InputError> {
    let invalid = |reason| InputError::InvalidFile {
        name: name.to_owned(),
        reason,
    };
    let relative = file_name(name);
    // A name is one file in the uploads directory: a `/` would make directories, `..` would leave it.
    let path = join_sandbox_path(uploads_dir, relative).map_err(|_| invalid("the name must be a plain file name"))?;
    let (header, payload) = data
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','))
        .ok_or_else(|| invalid("the data must be a data URI"))?;
    if !header.split(';').any(|param| param == "base64") {
        return Err(invalid("the data URI must be base64-encoded"));
    }
    // Over the limit before decoding is over it after (4 characters carry 3 bytes).
    let estimated = (payload.len() as u64 / 4) * 3;
    if estimated > max_bytes + 3 {
        return Err(InputError::FileTooLarge {
            name: name.to_owned(),
            size: estimated,
            limit: max_bytes,
        });
    }
    let content = base64::engine::general_purpose::STANDARD
        .decode(payload.trim())
        .map_err(|_| invalid("the data is not valid base64"))?;
    if content.len() as u64 > max_bytes {
        return Err(InputError::FileTooLarge {
            name: name.to_owned(),
            size: content.len() as u64,
            limit: max_bytes,
        });
    }
    Ok(PendingUpload {
        path,
        content: Bytes::from(content),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(parts: Vec<UserContentPart>) -> TurnInputItem {
        TurnInputItem::UserMessage(UserMessage {
            content: UserMessageContent::Parts(parts),
        })
    }

    fn file(name: &str, data: &str) -> UserContentPart {
        UserContentPart::File {
            name: name.to_owned(),
            data: data.to_owned(),
        }
    }

    fn text(text: &str) -> UserContentPart {
        UserContentPart::Text { text: text.to_owned() }
    }

    #[test]
    fn other_files_go_to_the_uploads_directory_with_an_announcement() {
        let input = vec![message(vec![
            text("summarise these"),
            file("/report.csv", "data:text/csv;base64,YSxiCjEsMgo="),
            file("chart.png", "data:image/png;base64,iVBORw=="),
        ])];
        let (staged, uploads) = stage_uploads(&input, Some("/workspace/uploads"), 1024).unwrap();
        assert_eq!(
            uploads,
            vec![PendingUpload {
                path: "/workspace/uploads/report.csv".to_owned(),
                content: Bytes::from_static(b"a,b\n1,2\n"),
            }]
        );
        let announcement = "<tfy-internal>Uploaded files (1):\n[file_1]\n  filename: report.csv\n  path: \
             /workspace/uploads/report.csv\n  mime: text/csv\n  size: 8 bytes\n</tfy-internal>";
        assert_eq!(
            staged,
            vec![message(vec![
                file("chart.png", "data:image/png;base64,iVBORw=="),
                text(announcement),
                text("summarise these"),
            ])]
        );
    }

    #[test]
    fn images_pdfs_and_plain_messages_are_left_alone() {
        let input = vec![
            message(vec![file("a.pdf", "data:application/pdf;base64,JVBE"), text("x")]),
            TurnInputItem::UserMessage(UserMessage {
                content: UserMessageContent::Text("hi".to_owned()),
            }),
        ];
        let (staged, uploads) = stage_uploads(&input, None, 1024).unwrap();
        assert_eq!(staged, input);
        assert!(uploads.is_empty());
    }

    #[test]
    fn refuses_what_cannot_be_uploaded() {
        let refuse = |part: UserContentPart, dir: Option<&str>, limit: u64| {
            stage_uploads(&[message(vec![part])], dir, limit)
                .unwrap_err()
                .to_string()
        };
        let csv = "data:text/csv;base64,YSxiCjEsMgo=";
        assert!(refuse(file("a.csv", csv), None, 1024).contains("needs a sandbox"));
        for name in ["../etc/passwd", "a/../../b", "dir/a.csv", "..", ""] {
            let message = refuse(file(name, csv), Some("/w/uploads"), 1024);
            assert!(message.contains("plain file name"), "{name}: {message}");
        }
        assert!(refuse(file("a.csv", csv), Some("/w"), 4).contains("too large"));
        assert!(
            refuse(
                file("a.bin", "data:application/octet-stream;base64,%%%"),
                Some("/w"),
                64
            )
            .contains("base64")
        );
        assert!(refuse(file("a.txt", "data:text/plain,hello"), Some("/w"), 64).contains("base64-encoded"));
        assert!(refuse(file("a.txt", "hello"), Some("/w"), 64).contains("data URI"));
    }

    #[test]
    fn a_binary_file_is_uploaded_byte_for_byte() {
        let (_, uploads) = stage_uploads(
            &[message(vec![file(
                "blob.bin",
                "data:application/octet-stream;base64,AP8A/w==",
            )])],
            Some("/w/uploads"),
            64,
        )
        .unwrap();
        assert_eq!(uploads[0].content.as_ref(), &[0, 255, 0, 255]);
    }
}
