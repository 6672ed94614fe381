//! A binding's value for one owner key: literal text, parts of the writer's identity
//! (`{serviceAccount.namespace}`, `{serviceAccount.name}`, `{username}`) and an optional final
//! `*`. Parsed when the settings are validated, resolved against each writer when they apply.

use crate::reading::request::Writer;

/// A binding's value for one owner key: text and parts of the writer's identity, and
/// optionally a final `*` that matches any rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pieces: Vec<Piece>,
    prefix: bool,
    /// The value as written in the settings (how messages name the pattern).
    written: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Namespace,
    Name,
    Username,
}

const PLACEHOLDERS: [(&str, Piece); 3] = [
    ("{serviceAccount.namespace}", Piece::Namespace),
    ("{serviceAccount.name}", Piece::Name),
    ("{username}", Piece::Username),
];

impl Pattern {
    /// Parses a binding's value; the error says what is wrong.
    pub fn parse(value: &str) -> Result<Pattern, String> {
        let (body, prefix) = match value.strip_suffix('*') {
            Some(body) => (body, true),
            None => (value, false),
        };
        if body.bytes().any(|b| b == b'*') {
            return Err("'*' may only end a value (\"team-a-*\")".into());
        }
        let mut pieces = Vec::new();
        let mut rest = body;
        while !rest.is_empty() {
            match rest.bytes().position(|b| b == b'{' || b == b'}') {
                Some(0) => {
                    let Some((piece, after)) = PLACEHOLDERS
                        .iter()
                        .find_map(|(name, piece)| Some((piece, rest.strip_prefix(name)?)))
                    else {
                        return Err(format!(
                            "unknown placeholder at {:?}: use {{serviceAccount.namespace}}, \
                             {{serviceAccount.name}} or {{username}}",
                            rest
                        ));
                    };
                    pieces.push(piece.clone());
                    rest = after;
                }
                Some(at) => {
                    // `at` is an ASCII byte's position: a character boundary.
                    let (text, after) = (rest.get(..at), rest.get(at..));
                    pieces.push(Piece::Text(text.unwrap_or_default().to_string()));
                    rest = after.unwrap_or_default();
                }
                None => {
                    pieces.push(Piece::Text(rest.to_string()));
                    rest = "";
                }
            }
        }
        if value.is_empty() {
            pieces.push(Piece::Text(String::new()));
        }
        Ok(Pattern {
            pieces,
            prefix,
            written: value.to_string(),
        })
    }

    /// The value as written in the settings.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// Whether the value ends in `*` (matches any rest), so binds to many owners.
    pub fn is_prefix(&self) -> bool {
        self.prefix
    }

    /// Whether the value takes a part of a service account's name.
    pub fn needs_service_account(&self) -> bool {
        (self.pieces.iter()).any(|p| matches!(p, Piece::Namespace | Piece::Name))
    }

    pub(crate) fn is_literal(&self) -> bool {
        self.pieces.iter().all(|p| matches!(p, Piece::Text(_)))
    }

    /// The value for `writer`, before any final `*`; `None` when the writer lacks a part
    /// the value takes (a user is no service account).
    pub(crate) fn resolve(&self, writer: &Writer) -> Option<String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Namespace => out.push_str(writer.service_account()?.0),
                Piece::Name => out.push_str(writer.service_account()?.1),
                Piece::Username => out.push_str(writer.username.as_deref()?),
            }
        }
        Some(out)
    }

    pub(crate) fn matches_resolved(&self, resolved: &str, value: &str) -> bool {
        if self.prefix {
            value.starts_with(resolved)
        } else {
            value == resolved
        }
    }

    /// Whether some writer could be bound to `value`: a literal value must match; one that
    /// takes parts of the writer's identity covers any value.
    pub(crate) fn covers(&self, value: &str) -> bool {
        match self.pieces.as_slice() {
            [Piece::Text(t)] => self.matches_resolved(t, value),
            _ if self.is_literal() => self.matches_resolved("", value),
            _ => true,
        }
    }

    /// Whether `writer` is bound to `value` by this pattern.
    pub(crate) fn binds(&self, writer: &Writer, value: &str) -> bool {
        self.resolve(writer)
            .is_some_and(|resolved| self.matches_resolved(&resolved, value))
    }
}
