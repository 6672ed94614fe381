//! Messages written part by part with `push_str`, not with `format!`.
//!
//! In WebAssembly `core::fmt` costs about 0.1 µs per argument (a formatter, dynamic calls,
//! padding checks): the owner-change message on the 2 KB CRD took 0.68 µs to build, more
//! than a third of the whole evaluation. The rules' messages are literal text, names, owner
//! keys and numbers, so they are written as a list of parts (`message!`), each of which
//! knows how to write itself (`Part`).

/// Something a message can show.
pub trait Part {
    fn write_to(&self, out: &mut String);
}

impl Part for str {
    fn write_to(&self, out: &mut String) {
        text(out, self);
    }
}

impl Part for String {
    fn write_to(&self, out: &mut String) {
        text(out, self);
    }
}

impl<T: Part + ?Sized> Part for &T {
    fn write_to(&self, out: &mut String) {
        (**self).write_to(out);
    }
}

/// Nothing when absent.
impl<T: Part> Part for Option<T> {
    fn write_to(&self, out: &mut String) {
        if let Some(part) = self {
            part.write_to(out);
        }
    }
}

/// In decimal (revisions; only the two rejections that name one use it, so `core::fmt`).
impl Part for u64 {
    fn write_to(&self, out: &mut String) {
        text(out, &self.to_string());
    }
}

/// A string in double quotes, as `{:?}` writes it. Kubernetes names are printable ASCII
/// without quotes or backslashes, which `{:?}` leaves as they are; only other strings go
/// through `{:?}` (which looks up every character in Unicode tables).
pub struct Quoted<'s>(pub &'s str);

impl Part for Quoted<'_> {
    fn write_to(&self, out: &mut String) {
        let plain = |b: &u8| (b' '..=b'~').contains(b) && *b != b'"' && *b != b'\\';
        if self.0.as_bytes().iter().all(plain) {
            text(out, "\"");
            text(out, self.0);
            text(out, "\"");
        } else {
            text(out, &format!("{:?}", self.0));
        }
    }
}

/// `message!(part, ...)`: a new `String` with the parts written one after the other; a
/// literal is appended as it is, any other part writes itself.
macro_rules! message {
    (@write $out:ident;) => {};
    (@write $out:ident; $text:literal $(, $($rest:tt)*)?) => {
        $crate::rules::message::text(&mut $out, $text);
        message!(@write $out; $($($rest)*)?)
    };
    (@write $out:ident; $part:expr $(, $($rest:tt)*)?) => {
        $crate::rules::message::Part::write_to(&$part, &mut $out);
        message!(@write $out; $($($rest)*)?)
    };
    ($($parts:tt)+) => {{
        let mut out = String::with_capacity(512);
        message!(@write out; $($parts)+);
        out
    }};
}

/// Appends `s`. Every piece of every message goes through this one function, not an inlined
/// `push_str`, which keeps the module small (inlined, the messages took 9 KB more).
#[inline(never)]
pub fn text(out: &mut String, s: &str) {
    out.push_str(s);
}

pub(crate) use message;

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("widgets.example.com")]
    #[case("")]
    #[case("with space ~")]
    #[case("q\"uote")]
    #[case("back\\slash")]
    #[case("tab\t")]
    #[case("é")]
    #[case("\u{301}combining")]
    fn quoted_is_what_debug_writes(#[case] s: &str) {
        assert_eq!(message!(Quoted(s)), format!("{s:?}"));
    }

    #[rstest]
    #[case(0)]
    #[case(7)]
    #[case(10)]
    #[case(1_000_000_007)]
    #[case(u64::MAX)]
    fn numbers_are_decimal(#[case] n: u64) {
        assert_eq!(message!(n), n.to_string());
    }

    #[test]
    fn parts_follow_each_other() {
        let absent: Option<&str> = None;
        let (owned, three) = (String::from("owned"), 3u64);
        assert_eq!(
            message!("a ", Some("b"), absent, " ", owned, " ", three),
            "a b owned 3"
        );
    }
}
