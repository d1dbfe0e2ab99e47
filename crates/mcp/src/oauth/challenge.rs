//! `WWW-Authenticate` parsing (RFC 9110 §11.6.1), for the `Bearer` challenge an MCP server sends
//! with a 401 (RFC 6750 §3, RFC 9728 §5.1).

use reqwest::header::{HeaderMap, WWW_AUTHENTICATE};

/// One challenge: its scheme and its auth-params (names lower-cased, values unquoted). A token68
/// challenge (`Basic abc==`) has no params.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthChallenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl AuthChallenge {
    /// The value of `name` (case-insensitive), if present.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// The parameters of a `Bearer` challenge that matter to an MCP client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// Where the protected-resource metadata is (RFC 9728).
    pub resource_metadata: Option<String>,
    /// The scope the resource asks for.
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, …
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl BearerChallenge {
    /// The first `Bearer` challenge in `header`, if any.
    pub fn parse(header: &str) -> Option<Self> {
        parse_www_authenticate(header)
            .into_iter()
            .find(|challenge| challenge.scheme.eq_ignore_ascii_case("bearer"))
            .map(|challenge| Self {
                resource_metadata: challenge.param("resource_metadata").map(str::to_owned),
                scope: challenge.param("scope").map(str::to_owned),
                error: challenge.param("error").map(str::to_owned),
                error_description: challenge.param("error_description").map(str::to_owned),
            })
    }

    /// The first `Bearer` challenge over all `WWW-Authenticate` headers of an answer.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find_map(Self::parse)
    }
}

/// Every challenge in a `WWW-Authenticate` value. Lenient where servers are sloppy (unquoted
/// values holding `/` or `:`), and never fails: what cannot be read is skipped.
pub fn parse_www_authenticate(header: &str) -> Vec<AuthChallenge> {
    let mut cursor = Cursor { text: header, at: 0 };
    let mut challenges = Vec::new();
    loop {
        cursor.skip(|c| c == ',' || c == ' ' || c == '\t');
        if cursor.done() {
            break;
        }
        let scheme = cursor.take(is_tchar);
        if scheme.is_empty() {
            // Not a token where a scheme belongs: skip to the next list element.
            cursor.skip(|c| c != ',');
            continue;
        }
        let mut challenge = AuthChallenge {
            scheme: scheme.to_owned(),
            params: Vec::new(),
        };
        if cursor.peek().is_some_and(|c| c == ' ' || c == '\t') {
            cursor.skip(|c| c == ' ' || c == '\t');
            read_params(&mut cursor, &mut challenge);
        }
        challenges.push(challenge);
    }
    challenges
}

/// Reads auth-params (or one token68) until the next challenge's scheme or the end.
fn read_params(cursor: &mut Cursor<'_>, challenge: &mut AuthChallenge) {
    loop {
        cursor.skip(|c| c == ',' || c == ' ' || c == '\t');
        let start = cursor.at;
        let name = cursor.take(is_tchar);
        if name.is_empty() {
            if cursor.done() {
                return;
            }
            cursor.skip(|c| c != ',');
            continue;
        }
        cursor.skip(|c| c == ' ' || c == '\t');
        if cursor.peek() != Some('=') {
            // A token not followed by `=` starts the next challenge.
            cursor.at = start;
            return;
        }
        let equals_at = cursor.at;
        cursor.skip(|c| c == '=');
        let after_equals = cursor.at;
        cursor.skip(|c| c == ' ' || c == '\t');
        if cursor.done() || cursor.peek() == Some(',') {
            // `name=` with nothing after it is a token68 such as `abc==`; it carries no params.
            if after_equals - equals_at > 1 || challenge.params.is_empty() {
                return;
            }
            continue;
        }
        let value = if cursor.peek() == Some('"') {
            cursor.quoted()
        } else {
            cursor.take(|c| c != ',' && c != ' ' && c != '\t').to_owned()
        };
        challenge.params.push((name.to_ascii_lowercase(), value));
    }
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn done(&self) -> bool {
        self.at >= self.text.len()
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn skip(&mut self, keep_going: impl Fn(char) -> bool) {
        let _ = self.take(keep_going);
    }

    fn take(&mut self, keep_going: impl Fn(char) -> bool) -> &'a str {
        let rest = &self.text[self.at..];
        let len = rest.find(|c| !keep_going(c)).unwrap_or(rest.len());
        self.at += len;
        &rest[..len]
    }

    /// A quoted-string starting at the opening quote, unescaped; an unterminated one runs to the end.
    fn quoted(&mut self) -> String {
        let mut value = String::new();
        let mut chars = self.text[self.at..].char_indices().skip(1);
        let mut end = self.text.len() - self.at;
        while let Some((offset, c)) = chars.next() {
            match c {
                '"' => {
                    end = offset + 1;
                    break;
                }
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                other => value.push(other),
            }
        }
        self.at += end;
        value
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oauth_bearer_challenge_with_resource_metadata() {
        let header = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#;
        let bearer = BearerChallenge::parse(header).unwrap();
        assert_eq!(
            bearer.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(bearer.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(bearer.error, None);
    }

    #[test]
    fn oauth_challenge_scheme_is_case_insensitive_and_commas_in_quotes_survive() {
        let header = r#"bEaReR error="invalid_token", error_description="expired, \"really\"", realm=example"#;
        let bearer = BearerChallenge::parse(header).unwrap();
        assert_eq!(bearer.error.as_deref(), Some("invalid_token"));
        assert_eq!(bearer.error_description.as_deref(), Some(r#"expired, "really""#));
    }

    #[test]
    fn oauth_bearer_found_after_other_challenges() {
        let header = r#"Basic realm="a, b", Negotiate abc123==, Bearer Resource_Metadata=https://x.test/prm, error="insufficient_scope""#;
        let challenges = parse_www_authenticate(header);
        let schemes: Vec<&str> = challenges.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Negotiate", "Bearer"]);
        assert_eq!(challenges[0].param("realm"), Some("a, b"));
        assert!(challenges[1].params.is_empty());
        let bearer = BearerChallenge::parse(header).unwrap();
        assert_eq!(bearer.resource_metadata.as_deref(), Some("https://x.test/prm"));
        assert_eq!(bearer.error.as_deref(), Some("insufficient_scope"));
    }

    #[test]
    fn oauth_challenge_parsing_survives_garbage() {
        assert_eq!(BearerChallenge::parse(""), None);
        assert_eq!(BearerChallenge::parse("Basic realm=\"x\""), None);
        assert_eq!(BearerChallenge::parse("Bearer"), Some(BearerChallenge::default()));
        let bearer = BearerChallenge::parse(r#"Bearer ="x", resource_metadata="unterminated"#).unwrap();
        assert_eq!(bearer.resource_metadata.as_deref(), Some("unterminated"));
        for junk in ["\"", ",,,", "Bearer ,=,\"", "Bearer a=\"\\", "é Bearer x=y"] {
            let _ = parse_www_authenticate(junk);
        }
    }
}
