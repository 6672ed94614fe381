//! Reading the validation payload: the request, and of its objects only what the rules need,
//! without building a tree of the JSON (`json`); the stamped object spliced into the bytes
//! the request came in (`splice`).

pub mod json;
pub mod request;
pub(crate) mod splice;
