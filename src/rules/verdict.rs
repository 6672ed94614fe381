//! The answer of the rules to one admission request, before `admission` writes it for the
//! host.

/// The answer to one admission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept {
        warnings: Vec<String>,
    },
    /// A rule refuses the write: answered 403 Forbidden.
    Reject {
        message: String,
    },
    /// The request cannot be read (a value the rules need is malformed, or an object the
    /// operation must carry is missing): rejected as a bad request.
    Unreadable {
        message: String,
    },
    /// The stamping policy adds owner keys: the new object, as JSON.
    Mutate {
        object: Vec<u8>,
    },
}

impl Verdict {
    pub fn accept() -> Verdict {
        Verdict::Accept {
            warnings: Vec::new(),
        }
    }

    pub fn warn(warning: String) -> Verdict {
        Verdict::Accept {
            warnings: vec![warning],
        }
    }

    pub fn reject(message: String) -> Verdict {
        Verdict::Reject { message }
    }

    /// The refusal of a request without an object its operation must carry.
    pub fn missing(operation: &str, field: &str) -> Verdict {
        Verdict::Unreadable {
            message: format!(
                "the admission request cannot be read: {field} is missing or null, but every \
                 {operation} request carries it"
            ),
        }
    }
}
