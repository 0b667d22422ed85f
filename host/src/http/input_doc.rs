//! What a route accepts and answers, for the OpenAPI document (`openapi.rs`).
//!
//! A route's parameters are not written down a second time: its typed inputs (`FromParams`)
//! are run on recording parameters, which note every name and kind the input asks for. One run
//! sees one path through the input's code, so `describe` runs it again with a sample value for
//! every name seen so far, and learns a required parameter from the `"<name> is missing"` error
//! an absent one causes, until a run teaches nothing new. What the document says of a route is
//! therefore what its input's code reads, and changes with it.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{PartialSchema, ToSchema};

use super::error::{ApiError, ApiResult};
use super::params::{FromParams, FromParamsIn, Params};

/// What kind of value an input asked a parameter for (the `Params` accessor it called).
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// Read raw, or only tested for presence.
    Any,
    String {
        max_length: Option<usize>,
    },
    Bool,
    Int,
    Float,
    OneOf(Vec<String>),
    StringList,
    IntList,
    Object,
    Date,
    DateTime,
    File,
}

/// One parameter an input reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamRead {
    pub name: String,
    pub kind: ParamKind,
    pub required: bool,
}

type Parse = Arc<dyn Fn(&Params) -> ApiResult<()> + Send + Sync>;

/// The schemas of a success body: registers them, and says which one the body is.
type Register = fn(&mut Vec<(String, RefOr<Schema>)>) -> String;

/// What a success response carries.
#[derive(Clone, Copy)]
pub enum Body {
    One(Register),
    /// One, or `null` when there is none (GitLab's answer for an unset singleton).
    OneOrNull(Register),
    List(Register),
    /// Always `[]`: a list of what Trellis does not have (merge requests).
    EmptyList,
    /// Bytes, not JSON, in one of these media types (archives, raw files).
    Bytes(&'static [&'static str]),
}

/// What one method of a route takes (its typed inputs) and answers (its view, when the view
/// has a schema).
#[derive(Clone, Default)]
pub struct Doc {
    inputs: Vec<Parse>,
    pub body: Option<Body>,
}

impl fmt::Debug for Doc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Doc")
            .field("inputs", &self.inputs.len())
            .field("body", &self.body.is_some())
            .finish()
    }
}

impl Doc {
    pub fn new() -> Self {
        Doc::default()
    }

    /// The route reads the typed input `T`.
    pub fn input<T: FromParams + 'static>(self) -> Self {
        self.reads(T::from_params)
    }

    /// The route reads `T` in `context`: document the widest one (an administrator's).
    pub fn input_in<T, C>(self, context: C) -> Self
    where
        T: FromParamsIn<C> + 'static,
        C: Clone + Send + Sync + 'static,
    {
        self.reads(move |p| T::from_params_in(p, context.clone()))
    }

    /// The route reads parameters through `read` (an input not yet its own type).
    pub fn reads<R>(
        mut self,
        read: impl Fn(&Params) -> ApiResult<R> + Send + Sync + 'static,
    ) -> Self {
        self.inputs.push(Arc::new(move |p| read(p).map(drop)));
        self
    }

    /// The success body is one `T`.
    pub fn answers<T: ToSchema>(mut self) -> Self {
        self.body = Some(Body::One(register::<T>));
        self
    }

    /// The success body is one `T`, or `null`.
    pub fn answers_or_null<T: ToSchema>(mut self) -> Self {
        self.body = Some(Body::OneOrNull(register::<T>));
        self
    }

    /// The success body is a list of `T`.
    pub fn answers_list<T: ToSchema>(mut self) -> Self {
        self.body = Some(Body::List(register::<T>));
        self
    }

    /// The success body is always an empty list.
    pub fn answers_empty_list(mut self) -> Self {
        self.body = Some(Body::EmptyList);
        self
    }

    /// The success body is bytes in one of `media_types`.
    pub fn answers_bytes(mut self, media_types: &'static [&'static str]) -> Self {
        self.body = Some(Body::Bytes(media_types));
        self
    }

    /// Every parameter the inputs read, in the order first read.
    pub fn params(&self) -> Vec<ParamRead> {
        let mut all: Vec<ParamRead> = Vec::new();
        for parse in &self.inputs {
            for read in describe(parse.as_ref()) {
                merge(&mut all, read);
            }
        }
        all
    }
}

fn register<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) -> String {
    schemas.push((T::name().into_owned(), <T as PartialSchema>::schema()));
    T::schemas(schemas);
    T::name().into_owned()
}

/// More runs than any input's branches need; a bound, so no input can loop the document.
const MAX_RUNS: usize = 8;

/// The parameters `parse` reads, run by run until a run adds nothing (see the module's doc).
fn describe(parse: &(dyn Fn(&Params) -> ApiResult<()> + Send + Sync)) -> Vec<ParamRead> {
    let mut known: Vec<ParamRead> = Vec::new();
    for _ in 0..MAX_RUNS {
        let (params, reads) = Params::recording(samples(&known));
        let result = parse(&params);
        let before = known.clone();
        for read in reads.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            merge(&mut known, read);
        }
        if let Err(ApiError::Missing(name)) = result {
            merge(
                &mut known,
                ParamRead {
                    name,
                    kind: ParamKind::Any,
                    required: true,
                },
            );
        }
        if known == before {
            break;
        }
    }
    known
}

/// Adds `read` to `all`: a name keeps its first specific kind, and is required once any read
/// requires it.
fn merge(all: &mut Vec<ParamRead>, read: ParamRead) {
    match all.iter_mut().find(|known| known.name == read.name) {
        Some(known) => {
            if known.kind == ParamKind::Any {
                known.kind = read.kind;
            }
            known.required |= read.required;
        }
        None => all.push(read),
    }
}

/// A value of each known parameter's kind that its accessor accepts, so the next run gets past
/// it. Files cannot be made up, and stay absent.
fn samples(known: &[ParamRead]) -> Map<String, Value> {
    known
        .iter()
        .filter_map(|read| {
            let value = match &read.kind {
                ParamKind::Any | ParamKind::String { .. } => json!("1"),
                ParamKind::Bool => json!(true),
                ParamKind::Int => json!(1),
                ParamKind::Float => json!(1.0),
                ParamKind::OneOf(allowed) => json!(allowed.first()?),
                ParamKind::StringList => json!(["1"]),
                ParamKind::IntList => json!([1]),
                ParamKind::Object => json!({}),
                ParamKind::Date => json!("2026-01-01"),
                ParamKind::DateTime => json!("2026-01-01T00:00:00Z"),
                ParamKind::File => return None,
            };
            Some((read.name.clone(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Create {
        _title: String,
    }

    impl FromParams for Create {
        fn from_params(p: &Params) -> ApiResult<Self> {
            let _title = p.required_string("title")?;
            let due = p.int("due_in")?;
            if due.is_some() {
                // Read only when due_in is given: a later run finds it.
                p.one_of("unit", &["days", "weeks"])?;
            }
            p.int("assignee")?
                .ok_or_else(|| ApiError::Missing("assignee".into()))?;
            p.file("avatar");
            Ok(Create { _title })
        }
    }

    fn find(params: &[ParamRead], name: &str) -> ParamRead {
        params.iter().find(|p| p.name == name).unwrap().clone()
    }

    #[test]
    fn an_input_is_described_by_what_it_reads() {
        let params = Doc::new().input::<Create>().params();
        let names: Vec<_> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["title", "due_in", "assignee", "unit", "avatar"]);
        assert!(find(&params, "title").required);
        assert!(find(&params, "assignee").required);
        assert_eq!(find(&params, "assignee").kind, ParamKind::Int);
        assert!(!find(&params, "due_in").required);
        assert_eq!(
            find(&params, "unit").kind,
            ParamKind::OneOf(vec!["days".into(), "weeks".into()])
        );
        assert_eq!(find(&params, "avatar").kind, ParamKind::File);
    }
}
