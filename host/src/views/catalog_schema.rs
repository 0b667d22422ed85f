//! Schemas of the view parts whose keys come from a list kept elsewhere (hook flags, push rule
//! settings, project and application settings). Such a part is serialised from the list's
//! names and values, and its schema is built from the same list here, so the list stays the one
//! place a key is added: no view field, no schema attribute to keep in step with it.

use serde::{Serialize, Serializer};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Schema, SchemaType, Type};

/// One property of a listed part: its name, its schema, and whether it is always present.
pub struct Property {
    pub name: &'static str,
    pub schema: Schema,
    pub required: bool,
}

impl Property {
    /// A property present in every view.
    pub fn always(name: &'static str, schema: Schema) -> Property {
        Property {
            name,
            schema,
            required: true,
        }
    }
}

/// An object with these properties. Other keys are not forbidden: the part is flattened into
/// a view that has more.
pub fn object(properties: impl IntoIterator<Item = Property>) -> RefOr<Schema> {
    let mut object = ObjectBuilder::new().schema_type(Type::Object);
    for property in properties {
        object = object.property(property.name, property.schema);
        if property.required {
            object = object.required(property.name);
        }
    }
    object.build().into()
}

/// A value of `schema_type`, or `null` when `nullable`.
pub fn typed(schema_type: Type, nullable: bool) -> Schema {
    let schema_type = if nullable {
        SchemaType::from_iter([schema_type, Type::Null])
    } else {
        SchemaType::from(schema_type)
    };
    ObjectBuilder::new().schema_type(schema_type).build().into()
}

/// One of these strings.
pub fn one_of(values: &[&str]) -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
        .into()
}

/// A list of items of `item_type`, or `null` when `nullable`.
pub fn list(item_type: Type, nullable: bool) -> Schema {
    let items = ObjectBuilder::new().schema_type(item_type).build();
    let array = ArrayBuilder::new().items(items);
    if nullable {
        array
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .build()
            .into()
    } else {
        array.build().into()
    }
}

/// An object of any keys whose values are of `value_type`.
pub fn map_of(value_type: Type, nullable: bool) -> Schema {
    let schema_type = if nullable {
        SchemaType::from_iter([Type::Object, Type::Null])
    } else {
        SchemaType::from(Type::Object)
    };
    ObjectBuilder::new()
        .schema_type(schema_type)
        .additional_properties(Some(typed(value_type, false)))
        .build()
        .into()
}

/// Serialises `(name, value)` pairs as the properties of an object (`serialize_with` of the
/// rows' flag and setting lists).
pub fn as_object<S: Serializer, V: Serialize>(
    pairs: &[(&'static str, V)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(pairs.iter().map(|(name, value)| (name, value)))
}
