//! Request parameters merged the way GitLab's Grape API sees them: the query string, then the
//! body (form, JSON or multipart) on top. Bracket names build arrays (`labels[]=a`) and hashes
//! (`custom_attributes[key]=v`). Accessors coerce as Grape does and fail with Grape's messages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, header};
use chrono::{DateTime, NaiveDate, Utc};
use serde_json::{Map, Value};

use super::error::{ApiError, ApiResult};
pub use super::input_doc::{ParamKind, ParamRead};
use crate::settings::validate::{NotThatKind, SettingParams, SettingsUpdate};
use crate::store::StoredName;

/// An endpoint's typed input: what it accepts, read from the merged parameters in one place
/// with Grape's coercion and messages (`Params`' accessors). Handlers call `api.input()` first
/// and do the lookups that depend on the input afterwards, so a reader sees what an endpoint
/// takes from its struct.
pub trait FromParams: Sized {
    fn from_params(params: &Params) -> ApiResult<Self>;
}

/// A typed input whose parameters depend on who is asking (`Audience`) or where: GitLab
/// declares some parameters only for administrators or only on some routes, and ignores them,
/// bad values included, everywhere else. Handlers call `api.input_in(context)`.
pub trait FromParamsIn<C>: Sized {
    fn from_params_in(params: &Params, context: C) -> ApiResult<Self>;
}

/// Who is asking, as far as the parameters an endpoint accepts are concerned.
#[derive(Debug, Clone, Copy, Default)]
pub struct Audience {
    pub signed_in: bool,
    pub admin: bool,
}

impl Audience {
    /// The widest audience, for which the OpenAPI document describes what an endpoint takes.
    pub const ADMIN: Audience = Audience {
        signed_in: true,
        admin: true,
    };
}

/// Declares a typed input that is one boolean parameter with its default (GitLab's many
/// `with_*` switches and flags): `flag_input!(LabelShape, "with_counts", false);` makes
/// `struct LabelShape(bool)`, read with `Params::bool`'s coercion and message.
macro_rules! flag_input {
    ($(#[$doc:meta])* $vis:vis $name:ident, $param:literal, $default:expr) => {
        $(#[$doc])*
        $vis struct $name(bool);

        impl $crate::http::params::FromParams for $name {
            fn from_params(
                p: &$crate::http::params::Params,
            ) -> $crate::http::error::ApiResult<Self> {
                Ok($name(p.bool($param)?.unwrap_or($default)))
            }
        }
    };
}
pub(crate) use flag_input;

pub use crate::services::uploads::UploadedFile;

#[derive(Debug, Default, Clone)]
pub struct Params {
    values: Map<String, Value>,
    files: HashMap<String, UploadedFile>,
    /// Set only when the OpenAPI document reads a typed input to learn what it accepts
    /// (`input_doc.rs`): every accessor then notes the name and kind it was asked for.
    reads: Option<Arc<Mutex<Vec<ParamRead>>>>,
}

/// How large a body may be, by kind, and where its files go.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits<'a> {
    pub structured: usize,
    pub multipart: usize,
    /// The directory multipart files are streamed to; `None` reads only the text fields
    /// and skips the files (the rate limiter looks for a token).
    pub spool: Option<&'a std::path::Path>,
}

impl Params {
    pub fn from_query(query: Option<&str>) -> Self {
        let mut params = Params::default();
        if let Some(query) = query {
            params.merge_pairs(form_urlencoded::parse(query.as_bytes()));
        }
        params
    }

    /// Reads the body according to its content type and merges it over the query parameters.
    pub async fn merge_body(
        &mut self,
        headers: &HeaderMap,
        body: Body,
        limits: BodyLimits<'_>,
    ) -> ApiResult<()> {
        let raw_content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let content_type = raw_content_type.to_ascii_lowercase();
        let multipart = is_multipart(headers);
        let limit = if multipart {
            limits.multipart
        } else {
            limits.structured
        };
        // A body that announces more than it may carry is refused before a byte is read.
        let announced = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if announced.is_some_and(|length| length > limit as u64) {
            return Err(ApiError::PayloadTooLarge);
        }
        if multipart {
            // The boundary is case-sensitive (browsers use mixed case): parse it unfolded.
            let boundary = multer::parse_boundary(raw_content_type)
                .map_err(|_| ApiError::BadRequest("invalid multipart body".into()))?;
            return self.merge_multipart(body, boundary, limits).await;
        }
        let bytes = read_limited(body, limits.structured).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        if content_type.starts_with("application/json") || content_type.contains("+json") {
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|_| ApiError::BadRequest("invalid JSON body".into()))?;
            match value {
                Value::Object(map) => self.values.extend(map),
                _ => {
                    return Err(ApiError::BadRequest(
                        "the JSON body must be an object".into(),
                    ));
                }
            }
        } else {
            // Grape treats a body without a JSON content type as a form.
            self.merge_pairs(form_urlencoded::parse(&bytes));
        }
        Ok(())
    }

    async fn merge_multipart(
        &mut self,
        body: Body,
        boundary: String,
        limits: BodyLimits<'_>,
    ) -> ApiResult<()> {
        let stream = http_body_util::BodyStream::new(body);
        let stream = futures_lite_stream(stream);
        let constraints = multer::Constraints::new()
            .size_limit(multer::SizeLimit::new().whole_stream(limits.multipart as u64));
        let mut multipart = multer::Multipart::with_constraints(stream, boundary, constraints);
        loop {
            let mut field = match multipart.next_field().await {
                Ok(Some(field)) => field,
                Ok(None) => break,
                Err(error) => return Err(multipart_error(error)),
            };
            let Some(name) = field.name().map(str::to_string) else {
                continue;
            };
            match (field.file_name().map(str::to_string), limits.spool) {
                (Some(filename), Some(dir)) => {
                    let file = super::upload::spool(field, dir, filename).await?;
                    self.files.insert(name.clone(), file);
                    // Presence of the key matters to handlers that distinguish "absent" from "".
                    self.values.insert(name, Value::String(String::new()));
                }
                (Some(_), None) => {
                    // Drained, never kept: the size cap still counts its bytes.
                    while field.chunk().await.map_err(multipart_error)?.is_some() {}
                }
                (None, _) => {
                    // Text fields stay in memory: they get the limit of a form body.
                    let mut bytes = Vec::new();
                    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
                        if bytes.len() + chunk.len() > limits.structured {
                            return Err(ApiError::PayloadTooLarge);
                        }
                        bytes.extend_from_slice(&chunk);
                    }
                    let text = String::from_utf8(bytes).map_err(|_| ApiError::invalid(&name))?;
                    self.insert_bracketed(&name, text);
                }
            }
        }
        Ok(())
    }

    fn merge_pairs<'a>(
        &mut self,
        pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
    ) {
        for (key, value) in pairs {
            self.insert_bracketed(&key, value.into_owned());
        }
    }

    /// `a=1` sets a, `a[]=1` appends to array a, `a[b]=1` sets key b of hash a,
    /// `a[b][]=1` appends to array b of hash a.
    fn insert_bracketed(&mut self, key: &str, value: String) {
        let Some(open) = key.find('[') else {
            self.values.insert(key.to_string(), Value::String(value));
            return;
        };
        let base = &key[..open];
        let mut path: Vec<&str> = Vec::new();
        let mut rest = &key[open..];
        while let Some(stripped) = rest.strip_prefix('[') {
            let Some(close) = stripped.find(']') else {
                break;
            };
            path.push(&stripped[..close]);
            rest = &stripped[close + 1..];
        }
        let slot = self.values.entry(base.to_string()).or_insert(Value::Null);
        insert_path(slot, &path, value);
    }

    /// Parameters from an already-parsed JSON object (for internal callers and tests).
    pub fn from_json_object(values: Map<String, Value>) -> Self {
        Params {
            values,
            ..Params::default()
        }
    }

    /// Parameters that note every read, for `input_doc::describe`.
    pub(super) fn recording(values: Map<String, Value>) -> (Self, Arc<Mutex<Vec<ParamRead>>>) {
        let reads = Arc::new(Mutex::new(Vec::new()));
        let params = Params {
            values,
            reads: Some(reads.clone()),
            ..Params::default()
        };
        (params, reads)
    }

    /// Notes a read when recording; the first specific kind asked for a name is its kind.
    fn note(&self, name: &str, kind: ParamKind, required: bool) {
        if let Some(reads) = &self.reads {
            let mut reads = reads.lock().unwrap_or_else(|e| e.into_inner());
            reads.push(ParamRead {
                name: name.to_string(),
                kind,
                required,
            });
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.note(name, ParamKind::Any, false);
        self.values.contains_key(name)
    }

    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.note(name, ParamKind::Any, false);
        self.values.get(name).filter(|v| !v.is_null())
    }

    pub fn file(&self, name: &str) -> Option<&UploadedFile> {
        self.note(name, ParamKind::File, false);
        self.files.get(name)
    }

    /// A string parameter; numbers and booleans are accepted as their text, as Grape coerces them.
    pub fn string(&self, name: &str) -> ApiResult<Option<String>> {
        self.note(name, ParamKind::String { max_length: None }, false);
        match self.raw(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(ApiError::invalid(name)),
        }
    }

    /// A string of at most `max` characters: longer ones answer as a failed model
    /// validation, `{"message":{"<name>":["is too long (maximum is <max> characters)"]}}`.
    pub fn string_at_most(&self, name: &str, max: usize) -> ApiResult<Option<String>> {
        self.note(
            name,
            ParamKind::String {
                max_length: Some(max),
            },
            false,
        );
        let value = self.string(name)?;
        if value.as_ref().is_some_and(|s| s.chars().count() > max) {
            return Err(ApiError::field(
                name,
                format!("is too long (maximum is {max} characters)"),
            ));
        }
        Ok(value)
    }

    pub fn required_string(&self, name: &str) -> ApiResult<String> {
        self.note(name, ParamKind::String { max_length: None }, true);
        self.string(name)?
            .ok_or_else(|| ApiError::Missing(name.to_string()))
    }

    /// A string that may not be blank when given (Grape's `allow_blank: false`).
    pub fn present_string(&self, name: &str) -> ApiResult<Option<String>> {
        match self.string(name)? {
            Some(s) if s.trim().is_empty() => {
                Err(ApiError::InvalidParam(format!("{name} is empty")))
            }
            other => Ok(other),
        }
    }

    pub fn bool(&self, name: &str) -> ApiResult<Option<bool>> {
        self.note(name, ParamKind::Bool, false);
        match self.raw(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::Number(n)) if n.as_i64() == Some(1) => Ok(Some(true)),
            Some(Value::Number(n)) if n.as_i64() == Some(0) => Ok(Some(false)),
            Some(Value::String(s)) => parse_bool(s)
                .map(Some)
                .ok_or_else(|| ApiError::invalid(name)),
            Some(_) => Err(ApiError::invalid(name)),
        }
    }

    pub fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        self.note(name, ParamKind::Int, false);
        match self.raw(name) {
            None => Ok(None),
            Some(value) => value_to_int(value)
                .map(Some)
                .ok_or_else(|| ApiError::invalid(name)),
        }
    }

    pub fn float(&self, name: &str) -> ApiResult<Option<f64>> {
        self.note(name, ParamKind::Float, false);
        match self.raw(name) {
            None => Ok(None),
            Some(Value::Number(n)) => n.as_f64().map(Some).ok_or_else(|| ApiError::invalid(name)),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| ApiError::invalid(name)),
            Some(_) => Err(ApiError::invalid(name)),
        }
    }

    /// One of a fixed set of values: `{"error":"sort does not have a valid value"}` otherwise.
    pub fn one_of(&self, name: &str, allowed: &[&str]) -> ApiResult<Option<String>> {
        let allowed_values = allowed.iter().map(|value| value.to_string()).collect();
        self.note(name, ParamKind::OneOf(allowed_values), false);
        match self.string(name)? {
            Some(value) if !allowed.contains(&value.as_str()) => Err(ApiError::InvalidParam(
                format!("{name} does not have a valid value"),
            )),
            other => Ok(other),
        }
    }

    /// One of `allowed` by its name (a state, a visibility, an access level...), with
    /// [`Params::one_of`]'s check and message.
    pub fn one_of_named<T: StoredName>(&self, name: &str, allowed: &[T]) -> ApiResult<Option<T>> {
        let names: Vec<&str> = allowed.iter().map(|value| value.name()).collect();
        let given = self.one_of(name, &names)?;
        Ok(given.and_then(|given| allowed.iter().copied().find(|value| value.name() == given)))
    }

    /// An array of strings: a JSON array, repeated `name[]`, or a comma-separated string.
    pub fn string_list(&self, name: &str) -> ApiResult<Option<Vec<String>>> {
        self.note(name, ParamKind::StringList, false);
        match self.raw(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(split_commas(s))),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.trim().to_string()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err(ApiError::invalid(name)),
                })
                .collect::<ApiResult<Vec<_>>>()
                .map(|items| Some(items.into_iter().filter(|s| !s.is_empty()).collect())),
            Some(_) => Err(ApiError::invalid(name)),
        }
    }

    pub fn int_list(&self, name: &str) -> ApiResult<Option<Vec<i64>>> {
        self.note(name, ParamKind::IntList, false);
        match self.raw(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| value_to_int(item).ok_or_else(|| ApiError::invalid(name)))
                .collect::<ApiResult<Vec<_>>>()
                .map(Some),
            Some(value) => match value_to_int(value) {
                Some(n) => Ok(Some(vec![n])),
                None => match value {
                    Value::String(s) => split_commas(s)
                        .iter()
                        .map(|part| part.parse::<i64>().map_err(|_| ApiError::invalid(name)))
                        .collect::<ApiResult<Vec<_>>>()
                        .map(Some),
                    _ => Err(ApiError::invalid(name)),
                },
            },
        }
    }

    pub fn object(&self, name: &str) -> ApiResult<Option<&Map<String, Value>>> {
        self.note(name, ParamKind::Object, false);
        match self.raw(name) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(ApiError::invalid(name)),
        }
    }

    /// `custom_attributes[key]=value` pairs (a hash of strings).
    pub fn custom_attributes(&self) -> ApiResult<Vec<(String, String)>> {
        let Some(attributes) = self.object("custom_attributes")? else {
            return Ok(Vec::new());
        };
        attributes
            .iter()
            .map(|(key, value)| match value.as_str() {
                Some(value) => Ok((key.clone(), value.to_string())),
                None => Err(ApiError::invalid("custom_attributes")),
            })
            .collect()
    }

    /// A date `YYYY-MM-DD`.
    pub fn date(&self, name: &str) -> ApiResult<Option<NaiveDate>> {
        self.note(name, ParamKind::Date, false);
        match self.string(name)? {
            None => Ok(None),
            Some(s) if s.is_empty() => Ok(None),
            Some(s) => parse_date(&s)
                .map(Some)
                .ok_or_else(|| ApiError::invalid(name)),
        }
    }

    /// An ISO 8601 date-time (a bare date means its midnight UTC).
    pub fn datetime(&self, name: &str) -> ApiResult<Option<DateTime<Utc>>> {
        self.note(name, ParamKind::DateTime, false);
        match self.string(name)? {
            None => Ok(None),
            Some(s) => parse_datetime(&s)
                .map(Some)
                .ok_or_else(|| ApiError::invalid(name)),
        }
    }
}

pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "y" | "on" => Some(true),
        "false" | "f" | "0" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}

pub fn parse_date(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()
}

pub fn parse_datetime(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Some(dt.with_timezone(&Utc));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(naive) = chrono::NaiveDateTime::parse_from_str(s, format) {
            return Some(naive.and_utc());
        }
    }
    if let Ok(dt) = DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S %z") {
        return Some(dt.with_timezone(&Utc));
    }
    parse_date(s)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|n| n.and_utc())
}

fn split_commas(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn value_to_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn insert_path(slot: &mut Value, path: &[&str], value: String) {
    let Some((first, rest)) = path.split_first() else {
        *slot = Value::String(value);
        return;
    };
    if first.is_empty() {
        if !slot.is_array() {
            *slot = Value::Array(Vec::new());
        }
        let array = slot.as_array_mut().expect("just made an array");
        if rest.is_empty() {
            array.push(Value::String(value));
        } else {
            // `a[][b]=1`: a list of hashes; start a new element when the key repeats.
            let needs_new = match array.last() {
                Some(Value::Object(map)) => map.contains_key(rest[0]),
                _ => true,
            };
            if needs_new {
                array.push(Value::Object(Map::new()));
            }
            insert_path(array.last_mut().expect("pushed"), rest, value);
        }
        return;
    }
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    let map = slot.as_object_mut().expect("just made an object");
    let child = map.entry(first.to_string()).or_insert(Value::Null);
    insert_path(child, rest, value);
}

/// The whole body, or 413 past `limit` bytes.
pub async fn read_limited(body: Body, limit: usize) -> ApiResult<Bytes> {
    axum::body::to_bytes(body, limit).await.map_err(|error| {
        if is_length_limit(&error) {
            ApiError::PayloadTooLarge
        } else {
            ApiError::BadRequest("the request body could not be read".into())
        }
    })
}

fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if current.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = current.source();
    }
    false
}

pub(super) fn multipart_error(error: multer::Error) -> ApiError {
    match error {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => {
            ApiError::PayloadTooLarge
        }
        _ => ApiError::BadRequest("invalid multipart body".into()),
    }
}

/// Adapts the body's frame stream into the byte stream multer reads.
fn futures_lite_stream(
    stream: http_body_util::BodyStream<Body>,
) -> impl futures_core::Stream<Item = Result<Bytes, axum::Error>> + Send + 'static {
    futures_util::StreamExt::filter_map(stream, |frame| async move {
        match frame {
            Ok(frame) => frame.into_data().ok().map(Ok),
            Err(error) => Some(Err(error)),
        }
    })
}

/// Whether the request's body is `multipart/form-data` (the only kind that may be an upload).
pub fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"))
}

/// The settings read their update from the request's parameters with Grape's coercions.
impl SettingParams for Params {
    fn has(&self, name: &str) -> bool {
        Params::has(self, name)
    }

    fn raw(&self, name: &str) -> Option<&Value> {
        Params::raw(self, name)
    }

    fn bool(&self, name: &str) -> Result<Option<bool>, NotThatKind> {
        Params::bool(self, name).map_err(|_| NotThatKind)
    }

    fn int(&self, name: &str) -> Result<Option<i64>, NotThatKind> {
        Params::int(self, name).map_err(|_| NotThatKind)
    }

    fn float(&self, name: &str) -> Result<Option<f64>, NotThatKind> {
        Params::float(self, name).map_err(|_| NotThatKind)
    }

    fn string(&self, name: &str) -> Result<Option<String>, NotThatKind> {
        Params::string(self, name).map_err(|_| NotThatKind)
    }

    fn string_list(&self, name: &str) -> Result<Option<Vec<String>>, NotThatKind> {
        Params::string_list(self, name).map_err(|_| NotThatKind)
    }

    fn int_list(&self, name: &str) -> Result<Option<Vec<i64>>, NotThatKind> {
        Params::int_list(self, name).map_err(|_| NotThatKind)
    }

    fn object(&self, name: &str) -> Result<Option<&Map<String, Value>>, NotThatKind> {
        Params::object(self, name).map_err(|_| NotThatKind)
    }
}

impl FromParams for SettingsUpdate {
    fn from_params(params: &Params) -> ApiResult<Self> {
        Ok(SettingsUpdate::parse(params)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_build_arrays_and_hashes() {
        let p = Params::from_query(Some("labels[]=a&labels[]=b&attrs[k]=v&iids[]=3&x=1"));
        assert_eq!(
            p.string_list("labels").unwrap(),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(p.object("attrs").unwrap().unwrap()["k"], "v");
        assert_eq!(p.int_list("iids").unwrap(), Some(vec![3]));
        assert_eq!(p.int("x").unwrap(), Some(1));
    }

    #[test]
    fn comma_lists_and_grape_booleans() {
        let p = Params::from_query(Some("labels=a,%20b,,c&t=True&f=0&bad=maybe"));
        assert_eq!(
            p.string_list("labels").unwrap(),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(p.bool("t").unwrap(), Some(true));
        assert_eq!(p.bool("f").unwrap(), Some(false));
        assert!(p.bool("bad").is_err());
        assert_eq!(p.bool("absent").unwrap(), None);
    }

    #[test]
    fn wrong_types_are_invalid() {
        let p = Params::from_query(Some("n=abc&d=2020-13-01"));
        assert!(matches!(p.int("n"), Err(ApiError::InvalidParam(m)) if m == "n is invalid"));
        assert!(p.date("d").is_err());
        assert!(matches!(p.required_string("title"), Err(ApiError::Missing(m)) if m == "title"));
    }

    #[test]
    fn datetimes_accept_gitlab_forms() {
        for s in [
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.123+02:00",
            "2024-01-02",
            "2024-01-02T03:04:05",
        ] {
            assert!(parse_datetime(s).is_some(), "{s}");
        }
    }
}
