//! Who may write an owner's objects: owners bound to the identities that write them.
//!
//! The label rules guard the owner keys but trust whoever writes them: anyone RBAC lets write
//! an object could create it stamped with another owner's keys, edit it while keeping them, or
//! delete it. Tools that write under an identity of their own (Flux tenants impersonating a
//! service account, Argo CD's sync impersonation, a Helm or operator install with its own
//! service account) make the writer tell owners apart, so admission can check it from the
//! request's `userInfo`. A binding says which writers may write which owners' objects; an
//! owner no binding covers keeps only the label rules. Bindings are a scheme's: they name its
//! owner keys.
//!
//! The settings' side (`settings::Binding`) is what users write; `Bindings` is one scheme's,
//! worked out once per policy instance: owner keys by index, values as `Pattern`s.

use crate::owners::Owner;
use crate::reading::request::{Writer, split_at_byte};
use crate::rules::message::{Part, Quoted, text};
use crate::settings::pattern::Pattern;
use crate::settings::{Binding, Settings, Writers};

/// A binding's value as written, as the messages name it.
impl Part for Pattern {
    fn write_to(&self, out: &mut String) {
        text(out, self.written());
    }
}

/// Whether `writer` is one of `writers`.
pub fn is_one_of(writers: &Writers, writer: &Writer) -> bool {
    let username = writer.username();
    if !username.is_empty() && writers.users.iter().any(|u| u == username) {
        return true;
    }
    let in_group = |g: &String| writer.groups.iter().any(|w| **w == **g);
    if writers.groups.iter().any(in_group) {
        return true;
    }
    let Some((namespace, name)) = writer.service_account() else {
        return false;
    };
    writers.service_accounts.iter().any(|sa| {
        split_at_byte(sa, b'/')
            .is_some_and(|(ns, n)| (ns == "*" || ns == namespace) && (n == "*" || n == name))
    })
}

/// The identity rules of a policy: each scheme's bindings, worked out, and as configured (for
/// messages).
#[derive(Debug, Default)]
pub struct Identities {
    bindings: Vec<Bindings>,
    configured: Vec<Vec<Binding>>,
}

impl Identities {
    pub fn new(settings: &Settings) -> Identities {
        let exempt = settings.exempt_writers();
        let schemes = settings.schemes();
        Identities {
            bindings: (schemes.iter())
                .map(|s| {
                    let keys: Vec<String> = s.owner_keys().cloned().collect();
                    Bindings::new(&keys, &s.bindings, &exempt)
                })
                .collect(),
            configured: schemes.into_iter().map(|s| s.bindings).collect(),
        }
    }

    /// Whether no scheme has bindings (the identity rules are off).
    pub fn is_empty(&self) -> bool {
        self.bindings.iter().all(Bindings::is_empty)
    }

    /// Scheme `s`'s bindings (none for a scheme the settings do not have).
    pub fn of(&self, s: usize) -> &Bindings {
        static NONE: Bindings = Bindings {
            bound: Vec::new(),
            exempt: Writers {
                users: Vec::new(),
                groups: Vec::new(),
                service_accounts: Vec::new(),
                installer: false,
            },
            owner_keys: 0,
        };
        self.bindings.get(s).unwrap_or(&NONE)
    }

    pub fn configured(&self, s: usize) -> &[Binding] {
        self.configured.get(s).map_or(&[], Vec::as_slice)
    }

    /// The owner keys to stamp for `writer`: the scheme and values of the one owner it is
    /// bound to, under all schemes; none when it is bound to no owner or to several.
    pub fn stamp(&self, writer: &Writer) -> Option<(usize, Vec<(usize, String)>)> {
        let mut found = None;
        for (s, bindings) in self.bindings.iter().enumerate() {
            if let Some(values) = bindings.stamp(writer) {
                if found.is_some() {
                    return None;
                }
                found = Some((s, values));
            }
        }
        found
    }
}

/// One binding, worked out: its writers, and a pattern per owner key it names (by the key's
/// index in the scheme's owner, see `owners::Owner`).
#[derive(Debug)]
struct Bound {
    writers: Writers,
    owner: Vec<(usize, Pattern)>,
}

impl Bound {
    /// Whether some writer of this binding could write `owner`'s objects.
    fn covers(&self, owner: &Owner) -> bool {
        (self.owner.iter()).all(|(i, p)| owner.key(*i).is_some_and(|v| p.covers(v)))
    }

    fn binds(&self, writer: &Writer, owner: &Owner) -> bool {
        is_one_of(&self.writers, writer)
            && (self.owner.iter()).all(|(i, p)| owner.key(*i).is_some_and(|v| p.binds(writer, v)))
    }
}

/// One scheme's bindings, and the policy's exempt writers.
#[derive(Debug, Default)]
pub struct Bindings {
    bound: Vec<Bound>,
    exempt: Writers,
    /// How many owner keys there are: a binding that names fewer binds to many owners.
    owner_keys: usize,
}

/// What the identity rules say of one writer and an owner some binding covers.
#[derive(Debug, PartialEq, Eq)]
pub enum Permit {
    Bound,
    Exempt,
    /// Bindings cover the owner, and none binds the writer to it: these ones may.
    Refused {
        covering: Vec<usize>,
    },
}

impl Bindings {
    /// Works out the bindings of a valid scheme (a value that does not parse binds no one,
    /// but settings are validated before this).
    pub fn new(keys: &[String], bindings: &[Binding], exempt: &Writers) -> Bindings {
        let bound = (bindings.iter())
            .map(|b| Bound {
                writers: b.writers.clone(),
                owner: (b.owner.iter())
                    .filter_map(|(key, value)| {
                        let slot = keys.iter().position(|k| k == key)?;
                        Some((slot, Pattern::parse(value).ok()?))
                    })
                    .collect(),
            })
            .collect();
        Bindings {
            bound,
            exempt: exempt.clone(),
            owner_keys: keys.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bound.is_empty()
    }

    /// Whether some binding covers `owner` (an owned object's owner): then only the writers
    /// bound to it, and the exempt ones, may write its objects.
    pub fn covers(&self, owner: &Owner) -> bool {
        owner.is_some() && self.bound.iter().any(|b| b.covers(owner))
    }

    /// Whether `writer` may write the objects of `owner`, an owner `covers` says a binding
    /// covers (callers read the writer only then).
    pub fn permit(&self, owner: &Owner, writer: &Writer) -> Permit {
        if self.bound.iter().any(|b| b.binds(writer, owner)) {
            Permit::Bound
        } else if is_one_of(&self.exempt, writer) {
            Permit::Exempt
        } else {
            let covering = (self.bound.iter().enumerate())
                .filter(|(_, b)| b.covers(owner))
                .map(|(i, _)| i)
                .collect();
            Permit::Refused { covering }
        }
    }

    /// Whether a binding that covers `owner` binds its installer (`writers.installer`) and
    /// would bind `writer` by its owner values: then `writer` may write when it is the
    /// installer the owner names (looked up by the caller).
    pub fn installer_may(&self, owner: &Owner, writer: &Writer) -> bool {
        (self.bound.iter()).any(|b| {
            b.writers.installer
                && (b.owner.iter()).all(|(i, p)| owner.key(*i).is_some_and(|v| p.binds(writer, v)))
        })
    }

    /// The owner keys to stamp for `writer`: the values of the one owner it is bound to, as
    /// `(slot, value)`. None when the writer is exempt, bound to no owner, or to more than one:
    /// a binding that leaves an owner key out, or whose value ends in `*`, binds to many.
    pub fn stamp(&self, writer: &Writer) -> Option<Vec<(usize, String)>> {
        if is_one_of(&self.exempt, writer) {
            return None;
        }
        let mut stamp: Option<Vec<(usize, String)>> = None;
        for bound in self.bound.iter().filter(|b| is_one_of(&b.writers, writer)) {
            if bound.owner.len() != self.owner_keys {
                return None;
            }
            let mut values = Vec::with_capacity(bound.owner.len());
            for (slot, pattern) in &bound.owner {
                if pattern.is_prefix() {
                    return None;
                }
                values.push((*slot, pattern.resolve(writer)?));
            }
            // Two bindings that name the same owner may list its keys in any order.
            match &stamp {
                Some(other)
                    if other.len() != values.len() || !values.iter().all(|v| other.contains(v)) =>
                {
                    return None;
                }
                _ => stamp = Some(values),
            }
        }
        stamp
    }
}

/// A writer, as messages name it.
pub struct WriterName<'w, 'a>(pub &'w Writer<'a>);

impl Part for WriterName<'_, '_> {
    fn write_to(&self, out: &mut String) {
        match (self.0.service_account(), self.0.username()) {
            (Some((ns, name)), _) => {
                text(out, "service account ");
                text(out, ns);
                text(out, "/");
                text(out, name);
            }
            (None, "") => text(out, "an anonymous writer"),
            (None, user) => {
                text(out, "user ");
                Quoted(user).write_to(out);
            }
        }
    }
}

/// The writers of the bindings that cover an owner, as messages list them:
/// `bindings[0] (serviceAccounts */*, where kustomize.toolkit.fluxcd.io/namespace={serviceAccount.namespace})`;
/// `at` is where the scheme's bindings are (`schemes[2].` with several schemes).
pub struct Allowed<'s>(pub &'s str, pub &'s [Binding], pub &'s [usize]);

impl Part for Allowed<'_> {
    fn write_to(&self, out: &mut String) {
        let Allowed(at, bindings, covering) = self;
        for (n, i) in covering.iter().enumerate() {
            let Some(binding) = bindings.get(*i) else {
                continue;
            };
            text(out, if n == 0 { "" } else { "; " });
            text(out, at);
            text(out, "bindings[");
            text(out, &i.to_string());
            text(out, "] (");
            let w = &binding.writers;
            let lists = [
                ("users ", &w.users),
                ("groups ", &w.groups),
                ("serviceAccounts ", &w.service_accounts),
            ];
            let mut first = true;
            for (what, list) in lists.iter().filter(|(_, l)| !l.is_empty()) {
                text(out, if first { "" } else { ", " });
                first = false;
                text(out, what);
                text(out, &list.join(" "));
            }
            if w.installer {
                text(out, if first { "" } else { ", " });
                text(out, "the owner's installer");
            }
            if binding
                .owner
                .iter()
                .any(|(_, v)| v.bytes().any(|b| b == b'{'))
            {
                text(out, ", where ");
                for (k, (key, value)) in binding.owner.iter().enumerate() {
                    text(out, if k == 0 { "" } else { "," });
                    text(out, key);
                    text(out, "=");
                    text(out, value);
                }
            }
            text(out, ")");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reading::json::Str;
    use rstest::rstest;

    fn writer<'a>(username: &'a str, groups: &[&'a str]) -> Writer<'a> {
        Writer {
            username: Some(Str(username.into())),
            groups: groups.iter().map(|g| Str((*g).into())).collect(),
        }
    }

    #[rstest]
    #[case("system:serviceaccount:team-a:deployer", Some(("team-a", "deployer")))]
    #[case("system:serviceaccount:team-a", None)]
    #[case("system:serviceaccount::x", None)]
    #[case("system:serviceaccount:a:b:c", None)]
    #[case("alice", None)]
    fn service_accounts_are_read_off_usernames(
        #[case] username: &str,
        #[case] expected: Option<(&str, &str)>,
    ) {
        assert_eq!(writer(username, &[]).service_account(), expected);
    }

    #[rstest]
    #[case("team-a", "team-a", true)]
    #[case("team-a", "team-b", false)]
    #[case("team-*", "team-b", true)]
    #[case("team-*", "tea", false)]
    #[case("{serviceAccount.namespace}", "team-a", true)]
    #[case("{serviceAccount.namespace}", "team-b", false)]
    #[case("{serviceAccount.namespace}_*", "team-a_app", true)]
    #[case("{serviceAccount.namespace}_*", "team-b_app", false)]
    #[case("{serviceAccount.name}", "deployer", true)]
    #[case("{username}", "system:serviceaccount:team-a:deployer", true)]
    #[case("", "", true)]
    #[case("", "x", false)]
    fn patterns_bind_by_the_writer(
        #[case] pattern: &str,
        #[case] value: &str,
        #[case] bound: bool,
    ) {
        let p = Pattern::parse(pattern).unwrap();
        let w = writer("system:serviceaccount:team-a:deployer", &[]);
        assert_eq!(p.binds(&w, value), bound, "{pattern} {value}");
        assert!(!p.binds(&writer("alice", &[]), value) || !p.needs_service_account());
        assert_eq!(message_of(&p), pattern);
    }

    fn message_of(p: &Pattern) -> String {
        let mut out = String::new();
        p.write_to(&mut out);
        out
    }

    #[rstest]
    #[case("a*b", "'*' may only end")]
    #[case("{namespace}", "unknown placeholder")]
    #[case("x}", "unknown placeholder")]
    #[case("{serviceAccount.namespace", "unknown placeholder")]
    fn malformed_patterns_say_why(#[case] pattern: &str, #[case] why: &str) {
        let e = Pattern::parse(pattern).unwrap_err();
        assert!(e.contains(why), "{e}");
    }

    #[rstest]
    #[case(&["team-a/deployer"], "system:serviceaccount:team-a:deployer", true)]
    #[case(&["team-a/*"], "system:serviceaccount:team-a:other", true)]
    #[case(&["*/deployer"], "system:serviceaccount:team-b:deployer", true)]
    #[case(&["team-a/*"], "system:serviceaccount:team-b:deployer", false)]
    #[case(&["team-a/deployer"], "team-a/deployer", false)]
    fn service_account_patterns(#[case] sas: &[&str], #[case] user: &str, #[case] yes: bool) {
        let writers = Writers {
            service_accounts: sas.iter().map(|s| s.to_string()).collect(),
            ..Writers::default()
        };
        assert_eq!(is_one_of(&writers, &writer(user, &[])), yes);
    }

    #[test]
    fn users_and_groups_match_exactly() {
        let writers = Writers {
            users: vec!["alice".into()],
            groups: vec!["ops".into()],
            ..Writers::default()
        };
        assert!(is_one_of(&writers, &writer("alice", &[])));
        assert!(is_one_of(&writers, &writer("bob", &["dev", "ops"])));
        assert!(!is_one_of(&writers, &writer("bob", &["op"])));
        assert!(!is_one_of(&writers, &writer("Alice", &[])));
        assert!(!is_one_of(&writers, &Writer::default()));
    }
}
