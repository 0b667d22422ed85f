//! The OpenAPI 3.1 document of the REST API, served at `GET /api/v4/openapi.json`.
//!
//! It is built from the route table (`routes.rs`), so every `/api/v4` route and method is in it
//! by construction: each operation has its path parameters, the ways to authenticate, GitLab's
//! error statuses with the error body shape of `error.rs`, and a success response whose schema
//! is the view struct's (`#[derive(ToSchema)]`) where `RESPONSES` names one, any JSON otherwise.
//! The HTML pages, OAuth endpoints and operations probes are not part of the REST API and are
//! left out.

use std::sync::OnceLock;

use axum::Json;
use axum::http::Method;
use utoipa::openapi::path::{HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{
    AnyOfBuilder, ArrayBuilder, ComponentsBuilder, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    ContentBuilder, InfoBuilder, OpenApi, OpenApiBuilder, PathItem, PathsBuilder, Ref, RefOr,
    Required, ResponseBuilder,
};
use utoipa::{PartialSchema, ToSchema};

use super::error::ApiResult;
use super::request::Api;
use super::routes::RouteEntry;
use crate::views;

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

/// What a success response is: a view, or a list of them.
enum Body {
    One(&'static str),
    List(&'static str),
}

/// Success bodies of the routes whose views carry a schema: (method, path, body).
const RESPONSES: &[(Method, &str, Body)] = &[
    (Method::GET, "/api/v4/user", Body::One("UserSelf")),
    (Method::GET, "/api/v4/users", Body::List("UserSummary")),
    (Method::GET, "/api/v4/users/{id}", Body::One("UserPublic")),
];

/// The schemas `RESPONSES` refers to, with the ones they embed.
fn view_schemas(components: ComponentsBuilder) -> ComponentsBuilder {
    let mut schemas = Vec::new();
    register::<views::user::UserSelf>(&mut schemas);
    register::<views::user::UserSummary>(&mut schemas);
    register::<views::user::UserPublic>(&mut schemas);
    components.schemas_from_iter(schemas)
}

fn register<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), <T as PartialSchema>::schema()));
    T::schemas(schemas);
}

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
    for route in routes.iter().filter(|r| r.path.starts_with("/api/v4/")) {
        let path = openapi_path(&route.path);
        for method in &route.methods {
            // GET answers HEAD; documenting both would double every read operation.
            let Some(http_method) = http_method(method) else {
                continue;
            };
            let operation = operation(method, &route.path, &path);
            paths = paths.path(path.clone(), PathItem::new(http_method, operation));
        }
    }
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Trellis REST API v4")
                .version(crate::api::meta::VERSION)
                .description(Some(
                    "GitLab's REST API v4 as Trellis serves it; see docs/compatibility.md.",
                ))
                .build(),
        )
        .paths(paths.build())
        .components(Some(
            view_schemas(ComponentsBuilder::new())
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

fn operation(method: &Method, route: &str, path: &str) -> utoipa::openapi::path::Operation {
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
    let (status, description) = success_status(method);
    let mut success = ResponseBuilder::new().description(description);
    if status != "204" {
        success = success.content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(success_schema(method, route)))
                .build(),
        );
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

fn success_schema(method: &Method, route: &str) -> RefOr<Schema> {
    let body = RESPONSES
        .iter()
        .find(|(m, path, _)| m == method && *path == route)
        .map(|(_, _, body)| body);
    match body {
        Some(Body::One(name)) => Ref::from_schema_name(*name).into(),
        Some(Body::List(name)) => ArrayBuilder::new()
            .items(Ref::from_schema_name(*name))
            .build()
            .into(),
        None => any_value(),
    }
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
    fn described_responses_name_schemas_that_exist() {
        let document = serde_json::to_value(document()).unwrap();
        for (_, _, body) in RESPONSES {
            let (Body::One(name) | Body::List(name)) = body;
            assert!(
                document["components"]["schemas"][name].is_object(),
                "{name} is not in the components"
            );
        }
    }
}
