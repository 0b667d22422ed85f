//! The OpenAPI 3.1 document of the REST API, served at `GET /api/v4/openapi.json`.
//!
//! It is built from the route table (`routes.rs`), so every `/api/v4` route and method is in it
//! by construction: each operation has its path parameters, the query or body parameters its
//! typed inputs read (learned by running them, `input_doc.rs`), the ways to authenticate,
//! GitLab's error statuses with the error body shape of `error.rs`, and a success response
//! whose schema is the view struct's (`#[derive(ToSchema)]`) where the route's `Doc` names one
//! (or whose media types are the ones of a body that is bytes, not JSON), any JSON otherwise.
//! The HTML pages, OAuth endpoints and operations probes are not part of the REST API and are
//! left out.

use std::sync::OnceLock;

use crate::http::json::Json;
use axum::http::Method;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, Parameter, ParameterBuilder, ParameterIn, ParameterStyle,
};
use utoipa::openapi::request_body::{RequestBody, RequestBodyBuilder};
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, ComponentsBuilder, KnownFormat, ObjectBuilder, OneOfBuilder,
    Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    Content, ContentBuilder, InfoBuilder, OpenApi, OpenApiBuilder, PathItem, PathsBuilder, Ref,
    RefOr, Required, ResponseBuilder,
};

use super::error::ApiResult;
use super::input_doc::{Body, Doc, ParamKind, ParamRead};
use super::request::Api;
use super::routes::RouteEntry;

/// The error statuses every operation may answer, with GitLab's error body.
const ERROR_STATUSES: [(&str, &str); 9] = [
    (
        "400",
        "A parameter is missing or invalid, or the model refused the change",
    ),
    ("401", "No valid token"),
    (
        "403",
        "The caller may not do this, or the token lacks the scope",
    ),
    (
        "404",
        "The resource does not exist or is not visible to the caller",
    ),
    ("405", "The route does not answer this method"),
    ("409", "The change conflicts with the current state"),
    ("413", "The body is larger than allowed"),
    ("422", "The request cannot be processed"),
    ("429", "Rate limited"),
];

/// The security schemes: GitLab's token header, OAuth bearer tokens, and the token query
/// parameters GitLab also reads.
const SECURITY: [&str; 4] = [
    "private_token_header",
    "bearer",
    "private_token",
    "access_token",
];

/// The document, built once.
pub fn document() -> &'static OpenApi {
    static DOCUMENT: OnceLock<OpenApi> = OnceLock::new();
    DOCUMENT.get_or_init(|| build(&super::route_entries()))
}

/// Any signed-in user may read it, as GitLab's `/version`: a caller without a valid token on
/// this tenant gets 401, as on every other API route.
pub async fn serve(api: Api) -> ApiResult<Json<&'static OpenApi>> {
    api.user()?;
    Ok(Json(document()))
}

fn build(routes: &[RouteEntry]) -> OpenApi {
    let mut paths = PathsBuilder::new();
    let mut schemas = Vec::new();
    for route in routes.iter().filter(|r| r.path.starts_with("/api/v4/")) {
        let path = openapi_path(&route.path);
        for method in &route.methods {
            // GET answers HEAD; documenting both would double every read operation.
            let Some(http_method) = http_method(method) else {
                continue;
            };
            let doc = route
                .docs
                .iter()
                .find(|(documented, _)| documented == method)
                .map(|(_, doc)| doc.clone())
                .unwrap_or_default();
            let operation = operation(method, &path, &doc, &mut schemas);
            paths = paths.path(path.clone(), PathItem::new(http_method, operation));
        }
    }
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Trellis REST API v4")
                .version(crate::VERSION)
                .description(Some(
                    "GitLab's REST API v4 as Trellis serves it; see docs/compatibility.md.",
                ))
                .build(),
        )
        .paths(paths.build())
        .components(Some(
            ComponentsBuilder::new()
                .schemas_from_iter(schemas)
                .schema("Error", error_schema())
                .security_scheme(
                    "private_token_header",
                    SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("PRIVATE-TOKEN"))),
                )
                .security_scheme(
                    "bearer",
                    SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
                )
                .security_scheme(
                    "private_token",
                    SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::new("private_token"))),
                )
                .security_scheme(
                    "access_token",
                    SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::new("access_token"))),
                )
                .build(),
        ))
        .build()
}

fn operation(
    method: &Method,
    path: &str,
    doc: &Doc,
    schemas: &mut Vec<(String, RefOr<Schema>)>,
) -> utoipa::openapi::path::Operation {
    let mut operation = OperationBuilder::new()
        .operation_id(Some(format!("{} {path}", method.as_str())))
        .tag(tag(path))
        .securities(Some(SECURITY.iter().map(|scheme| {
            SecurityRequirement::new(*scheme, Vec::<String>::new())
        })));
    for name in path_parameters(path) {
        operation = operation.parameter(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(path_parameter_schema(path, name))),
        );
    }
    let inputs: Vec<ParamRead> = doc
        .params()
        .into_iter()
        .filter(|param| !path_parameters(path).any(|name| name == param.name))
        .collect();
    if !inputs.is_empty() {
        if takes_body(method) {
            operation = operation.request_body(Some(request_body(&inputs)));
        } else {
            for param in &inputs {
                operation = operation.parameter(query_parameter(param));
            }
        }
    }
    let (status, description) = success_status(method);
    let mut success = ResponseBuilder::new().description(description);
    if status != "204" {
        for (media_type, content) in success_content(doc.body, schemas) {
            success = success.content(media_type, content);
        }
    }
    operation = operation.response(status, success.build());
    for (status, description) in ERROR_STATUSES {
        operation = operation.response(
            status,
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("Error")))
                        .build(),
                )
                .build(),
        );
    }
    operation.build()
}

/// GitLab answers creation with 201 and deletion with 204; Trellis follows it.
fn success_status(method: &Method) -> (&'static str, &'static str) {
    match *method {
        Method::POST => ("201", "Created"),
        Method::DELETE => ("204", "Deleted"),
        _ => ("200", "OK"),
    }
}

/// GitLab's Grape reads a write's parameters from its body (and the query); reads and deletes
/// take them in the query.
fn takes_body(method: &Method) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// A read's parameter in the query. Lists are comma-separated and hashes bracketed
/// (`custom_attributes[key]=value`), as `params.rs` reads them.
fn query_parameter(param: &ParamRead) -> Parameter {
    let style = match param.kind {
        ParamKind::Object => ParameterStyle::DeepObject,
        _ => ParameterStyle::Form,
    };
    ParameterBuilder::new()
        .name(&param.name)
        .parameter_in(ParameterIn::Query)
        .required(required(param.required))
        .style(Some(style))
        .explode(Some(param.kind == ParamKind::Object))
        .schema(Some(param_schema(&param.kind)))
        .build()
}

/// A write's parameters as one JSON object, or a multipart form when one of them is a file.
fn request_body(inputs: &[ParamRead]) -> RequestBody {
    let mut object = ObjectBuilder::new().schema_type(Type::Object);
    for param in inputs {
        object = object.property(&param.name, param_schema(&param.kind));
        if param.required {
            object = object.required(&param.name);
        }
    }
    let content_type = if inputs.iter().any(|p| p.kind == ParamKind::File) {
        "multipart/form-data"
    } else {
        "application/json"
    };
    RequestBodyBuilder::new()
        .content(
            content_type,
            ContentBuilder::new().schema(Some(object.build())).build(),
        )
        .required(Some(required(inputs.iter().any(|p| p.required))))
        .build()
}

fn required(required: bool) -> Required {
    if required {
        Required::True
    } else {
        Required::False
    }
}

fn param_schema(kind: &ParamKind) -> Schema {
    let of = |schema_type: Type| ObjectBuilder::new().schema_type(schema_type);
    let formatted =
        |format: KnownFormat| of(Type::String).format(Some(SchemaFormat::KnownFormat(format)));
    let list = |items: Type| Schema::Array(ArrayBuilder::new().items(of(items)).build());
    Schema::Object(
        match kind {
            ParamKind::Any => ObjectBuilder::new().schema_type(SchemaType::AnyValue),
            ParamKind::String { max_length } => of(Type::String).max_length(*max_length),
            ParamKind::Bool => of(Type::Boolean),
            ParamKind::Int => of(Type::Integer),
            ParamKind::Float => of(Type::Number),
            ParamKind::OneOf(allowed) => of(Type::String).enum_values(Some(allowed.clone())),
            ParamKind::StringList => return list(Type::String),
            ParamKind::IntList => return list(Type::Integer),
            ParamKind::Object => of(Type::Object),
            ParamKind::Date => formatted(KnownFormat::Date),
            ParamKind::DateTime => formatted(KnownFormat::DateTime),
            ParamKind::File => formatted(KnownFormat::Binary),
        }
        .build(),
    )
}

/// The success body's media types with their schemas: JSON, or bytes in their own types.
fn success_content(
    body: Option<Body>,
    schemas: &mut Vec<(String, RefOr<Schema>)>,
) -> Vec<(&'static str, Content)> {
    let schema = match body {
        Some(Body::Bytes(media_types)) => {
            let bytes: Schema = ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
                .into();
            return media_types
                .iter()
                .map(|media_type| {
                    let content = ContentBuilder::new().schema(Some(bytes.clone())).build();
                    (*media_type, content)
                })
                .collect();
        }
        Some(Body::One(register)) => Ref::from_schema_name(register(schemas)).into(),
        Some(Body::OneOrNull(register)) => OneOfBuilder::new()
            .item(Ref::from_schema_name(register(schemas)))
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .into(),
        Some(Body::List(register)) => ArrayBuilder::new()
            .items(Ref::from_schema_name(register(schemas)))
            .build()
            .into(),
        Some(Body::EmptyList) => ArrayBuilder::new().max_items(Some(0)).build().into(),
        None => any_value(),
    };
    vec![(
        "application/json",
        ContentBuilder::new().schema(Some(schema)).build(),
    )]
}

fn any_value() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(SchemaType::AnyValue)
        .build()
        .into()
}

/// GitLab's error bodies (`error.rs`): `{"message": "..." | {field: [...]}}` or
/// `{"error": "..."}` (with `error_description` for OAuth errors).
fn error_schema() -> Schema {
    let string = || ObjectBuilder::new().schema_type(Type::String).build();
    let message = AnyOfBuilder::new()
        .item(string())
        .item(ObjectBuilder::new().schema_type(Type::Object).build());
    AnyOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .property("message", message)
                .required("message"),
        )
        .item(
            ObjectBuilder::new()
                .property("error", string())
                .required("error"),
        )
        .build()
        .into()
}

/// axum's `{*rest}` wildcards are OpenAPI's plain `{rest}` templates.
fn openapi_path(path: &str) -> String {
    path.replace("{*", "{")
}

/// The `{name}` templates of a path, whole segments or not (`archive.{format}`).
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
}

/// A project's or group's `id` is its numeric id or its URL-encoded path, as in GitLab; the
/// other identifiers (`user_id`, `issue_iid`, `key_id`...) are numbers, names are strings.
fn path_parameter_schema(path: &str, name: &str) -> Schema {
    let by_path = name == "id"
        && (path.starts_with("/api/v4/projects/") || path.starts_with("/api/v4/groups/"));
    let numeric = !by_path
        && (name == "id" || name == "iid" || name.ends_with("_id") || name.ends_with("_iid"));
    let schema_type = if numeric { Type::Integer } else { Type::String };
    ObjectBuilder::new().schema_type(schema_type).build().into()
}

/// Operations are grouped by their first path segment after `/api/v4`.
fn tag(path: &str) -> String {
    path.trim_start_matches("/api/v4/")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

fn http_method(method: &Method) -> Option<HttpMethod> {
    Some(match *method {
        Method::GET => HttpMethod::Get,
        Method::POST => HttpMethod::Post,
        Method::PUT => HttpMethod::Put,
        Method::PATCH => HttpMethod::Patch,
        Method::DELETE => HttpMethod::Delete,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_route_and_method_is_documented() {
        let document = serde_json::to_value(document()).unwrap();
        assert_eq!(document["openapi"], "3.1.0");
        for route in crate::http::route_entries() {
            if !route.path.starts_with("/api/v4/") {
                continue;
            }
            let item = &document["paths"][openapi_path(&route.path)];
            for method in route.methods.iter().filter(|m| **m != Method::HEAD) {
                let operation = &item[method.as_str().to_ascii_lowercase()];
                assert!(operation.is_object(), "{method} {} is missing", route.path);
                assert!(operation["responses"]["404"].is_object());
            }
        }
    }

    #[test]
    fn path_parameters_are_declared() {
        let document = serde_json::to_value(document()).unwrap();
        let get = &document["paths"]["/api/v4/projects/{id}/issues/{issue_iid}"]["get"];
        let parameters: Vec<_> = get["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| {
                (
                    p["name"].as_str().unwrap(),
                    p["schema"]["type"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(parameters, [("id", "string"), ("issue_iid", "integer")]);
    }

    #[test]
    fn templates_inside_a_segment_are_parameters() {
        let names: Vec<_> =
            path_parameters("/api/v4/projects/{id}/repository/archive.{format}").collect();
        assert_eq!(names, ["id", "format"]);
    }

    #[test]
    fn referenced_schemas_exist() {
        let text = serde_json::to_string(document()).unwrap();
        let document = serde_json::to_value(document()).unwrap();
        for reference in text.split("\"#/components/schemas/").skip(1) {
            let name = reference.split('"').next().unwrap();
            assert!(
                document["components"]["schemas"][name].is_object(),
                "{name} is not in the components"
            );
        }
    }

    #[test]
    fn typed_inputs_become_query_and_body_parameters() {
        let document = serde_json::to_value(document()).unwrap();
        let issues = &document["paths"]["/api/v4/projects/{id}/issues"];
        let query: Vec<_> = issues["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap(), p["in"].as_str().unwrap()))
            .collect();
        assert!(query.contains(&("state", "query")), "{query:?}");
        assert!(query.contains(&("per_page", "query")), "{query:?}");
        let body = &issues["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["required"], serde_json::json!(["title"]));
        assert_eq!(body["properties"]["confidential"]["type"], "boolean");
        assert_eq!(body["properties"]["title"]["type"], "string");
    }
}
