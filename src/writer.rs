//! Who writes: the request's `userInfo`, as the identity rules see it (a user, or a service
//! account by its `system:serviceaccount:NAMESPACE:NAME` username).

/// Who makes a request: its `userInfo`, as `request` reads it.
pub use crate::request::UserInfo as Writer;

/// The prefix of a service account's username.
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

impl Writer<'_> {
    pub fn username(&self) -> &str {
        self.username.as_deref().unwrap_or("")
    }

    /// `(namespace, name)` when the writer is a service account.
    pub fn service_account(&self) -> Option<(&str, &str)> {
        let rest = self.username().strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
        let (namespace, name) = split_at_byte(rest, b':')?;
        let valid = !namespace.is_empty() && !name.is_empty() && !name.bytes().any(|b| b == b':');
        valid.then_some((namespace, name))
    }
}

/// `s` split at the first `byte` (ASCII), without it. A loop over the bytes, not
/// `str::split_once`, whose searcher costs kilobytes of module.
pub fn split_at_byte(s: &str, byte: u8) -> Option<(&str, &str)> {
    let at = s.bytes().position(|b| b == byte)?;
    // An ASCII byte is a character boundary on both sides.
    Some((s.get(..at)?, s.get(at + 1..)?))
}
