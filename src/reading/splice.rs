//! The stamped object: a writer's owner keys added to the object it creates, as a mutating policy
//! answers (`mutated_object`). This is the seed's "proxy beside each install that stamps the
//! install's owner labels on everything it writes", done by admission: hooks and any other
//! object an install's identity writes carry its owner without the tool's help.
//!
//! The object comes back as the bytes it was sent, with the entries spliced into its labels
//! and annotations (made where absent): nothing else of it is parsed, rebuilt or reordered, so
//! the patch policy-server computes from the two holds only the stamped keys.

use crate::reading::json::write_string;
use crate::reading::request::{Object, Payload};

/// The object of `payload` with `labels` and `annotations` added. The keys must be absent on
/// the object (the caller checked), and its metadata must have been read without error.
pub fn stamped(
    payload: &Payload,
    object: &Object,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> Vec<u8> {
    let input = payload.input;
    let (start, end) = object.span;
    // (position, bytes replaced, text), in the payload's coordinates.
    let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::with_capacity(2);
    let maps = [("labels", labels), ("annotations", annotations)];
    let present = |entries: &[(&str, &str)]| !entries.is_empty();
    match (object.metadata_value, &object.metadata) {
        (Some(at), Some(metadata)) => {
            // New maps go in at the metadata's `{`, entries into an existing map at its `{`,
            // and a `null` map is replaced.
            let mut new_maps = Vec::new();
            for ((name, entries), existing) in
                maps.iter().zip([metadata.labels, metadata.annotations])
            {
                if !present(entries) {
                    continue;
                }
                match existing {
                    None => new_maps.push(field(name, entries)),
                    Some(map) if input.get(map) == Some(&b'n') => {
                        edits.push((map, 4, map_text(entries)));
                    }
                    Some(map) => edits.push((map + 1, 0, inside(input, map, vec![pairs(entries)]))),
                }
            }
            if !new_maps.is_empty() {
                edits.push((at + 1, 0, inside(input, at, new_maps)));
            }
        }
        // `metadata: null`, or no metadata at all.
        (at, _) => {
            let maps: Vec<Vec<u8>> = (maps.iter())
                .filter(|(_, entries)| present(entries))
                .map(|(name, entries)| field(name, entries))
                .collect();
            let mut metadata = b"{".to_vec();
            metadata.extend(maps.join(&b',').as_slice());
            metadata.push(b'}');
            match at {
                Some(at) => edits.push((at, 4, metadata)),
                None => {
                    let mut entry = br#""metadata":"#.to_vec();
                    entry.extend(metadata);
                    edits.push((start + 1, 0, inside(input, start, vec![entry])));
                }
            }
        }
    }
    // At most three edits: put them in order by hand (a sort is kilobytes of module).
    for i in 1..edits.len() {
        let mut j = i;
        while j > 0 && edits[j - 1].0 > edits[j].0 {
            edits.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut out = Vec::with_capacity(end - start + 256);
    let mut from = start;
    for (at, replaced, text) in edits {
        out.extend_from_slice(input.get(from..at).unwrap_or_default());
        out.extend(text);
        from = at + replaced;
    }
    out.extend_from_slice(input.get(from..end).unwrap_or_default());
    out
}

/// `"k":"v","k":"v"`.
fn pairs(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (key, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(&mut out, key);
        out.push(b':');
        write_string(&mut out, value);
    }
    out
}

fn map_text(entries: &[(&str, &str)]) -> Vec<u8> {
    let mut out = vec![b'{'];
    out.extend(pairs(entries));
    out.push(b'}');
    out
}

/// `"name":{...}`.
fn field(name: &str, entries: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    write_string(&mut out, name);
    out.push(b':');
    out.extend(map_text(entries));
    out
}

/// Entries to insert right after the `{` at `brace`: joined by commas, and followed by one
/// when the object already has entries.
fn inside(input: &[u8], brace: usize, entries: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = entries.join(&b',');
    let next = (input.get(brace + 1..).unwrap_or_default().iter())
        .find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'));
    if next != Some(&b'}') {
        out.push(b',');
    }
    out
}
