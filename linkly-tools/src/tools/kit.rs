//! The kit every tool uses: the [`ToolSpec`] a tool declares, argument parsing and schemas,
//! the shared parameter checks (document ids, types, time bounds), rendering in the requested
//! format. The registry ([`super::TOOLS`]) imports the tools; the tools import this, never the
//! registry.

use linkly_core::{CodedError, DocType, parse_time};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::check_choice;
use crate::render::{finish_json, finish_markdown};
use crate::{Linkly, OutputFormat, Result, ToolError, ToolOutput};

/// One tool as front ends see it: its name, description, input schema, what it reaches and
/// how it runs.
///
/// `Run` is how the tool is run: for the registry ([`super::TOOLS`]) a function over one
/// [`Linkly`]; a front end that serves many indexes (the gateway) keeps the same declarations
/// with its own routes ([`ToolSpec::serving`]) beside its own tools, so listing and calling come
/// from one table there too.
#[derive(Clone, Copy)]
pub struct ToolSpec<Run = Runner> {
    /// The tool's name (`search`).
    pub name: &'static str,
    /// A one-line human title.
    pub title: &'static str,
    /// The description shown to models: what the tool does and when to use it.
    pub description: &'static str,
    /// True for tools that never write.
    pub read_only: bool,
    /// True when calling again with the same arguments changes nothing more (every read, and
    /// a write such as linking a library twice).
    pub idempotent: bool,
    /// The JSON schema of the arguments.
    pub input_schema: fn() -> Value,
    /// The JSON schema of a successful JSON answer (before `_meta` is added); `None` for a
    /// tool that answers in Markdown only. A tool with several answer shapes gives a `oneOf`.
    pub output_schema: Option<fn() -> Value>,
    /// What the tool reads or writes: where a front end with several indexes sends a call.
    pub reach: Reach,
    /// How the tool runs.
    pub run: Run,
}

/// How a registry tool runs: over one index, with its JSON arguments.
pub type Runner = fn(&Linkly, Value) -> Result<Rendered>;

/// What a tool reads or writes, declared with it, so that a front end serving many indexes
/// (the gateway: one per cloud library, one per user's notes) routes a call it has never seen
/// by its declaration, not by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every library the caller may read, or those its parameters name (`search`, `list`,
    /// `list_libraries`): such a front end answers these its own way, or not at all.
    Libraries,
    /// One library: the one its optional `library` parameter names, else the only one
    /// (`explore`, `find_paths`).
    Library,
    /// The documents its parameter of this name holds (a document id or a list of them), all
    /// of one library (`outline`, `grep`, `read`).
    Documents(&'static str),
    /// The caller's own notes, which it writes (`note_save`).
    Notes,
}

impl<Run> ToolSpec<Run> {
    /// The same declaration, run another way: a front end's route for this tool.
    pub fn serving<Other>(&self, run: Other) -> ToolSpec<Other> {
        ToolSpec {
            name: self.name,
            title: self.title,
            description: self.description,
            read_only: self.read_only,
            idempotent: self.idempotent,
            input_schema: self.input_schema,
            output_schema: self.output_schema,
            reach: self.reach,
            run,
        }
    }
}

impl<Run> std::fmt::Debug for ToolSpec<Run> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("reach", &self.reach)
            .finish()
    }
}

/// A tool's parameter type: what [`crate::Linkly::call_params`] takes and
/// [`parse_params`] reads, named by its tool.
pub trait ToolParams: Serialize + DeserializeOwned + JsonSchema {
    /// The tool's name (`search`).
    const NAME: &'static str;
}

/// Reads a tool's parameters from JSON arguments as the tool does (`null` is none), with the
/// tool's errors: for a front end that looks at or changes typed parameters before the call.
pub fn parse_params<P: ToolParams>(args: Value) -> Result<P> {
    parse_args(if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    })
}

/// Declares a tool's parameter struct: `tool_params! { /// doc  pub struct GrepParams { … } }`.
///
/// Every tool's parameters follow one convention, written here once: the struct derives serde
/// and [`JsonSchema`] and refuses unknown fields, an `Option<_>` field may be absent (`null` is
/// "not given") and is left out when serialised, an `Option<i64>` field is also read from a
/// string holding the number ([`lenient_int`]), and the struct is the [`ToolParams`] of the
/// module's `SPEC`. Other fields (a required `String`, a `Vec`) are taken as written; each
/// field's doc comment and `#[schemars(...)]` bounds and defaults pass through.
///
/// With the `clap` feature the struct is also `clap::Args`, so a command line takes the tool's
/// own parameters, each field's doc comment (its schema description) being its help. The
/// command-line conventions are written here too: an optional parameter is a `--flag`, a list
/// one comma-separated (items trimmed), a boolean one `--flag` alone for true (or `--flag=false`); the answer's
/// format (`Option<OutputFormat>`) and the document types (`Option<Vec<DocType>>`, whose
/// refusal is the tool's own) are left to the command line (`--json`, `--type`). A field taken
/// as written is positional unless its own `#[cfg_attr(feature = "clap", arg(...))]` says
/// otherwise (or `arg(skip)`, for a parameter the command line fills itself); a field's own
/// `arg(...)` comes after the convention's, so it may add to or override it.
macro_rules! tool_params {
    ($(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
        $crate::tools::kit::tool_params!(@field [$(#[$meta])* $name] [] $($fields)*);
    };
    // The answer's format: the command line's `--json` sets it.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : Option<OutputFormat> $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            #[cfg_attr(feature = "clap", arg(skip))]
            $(#[$m])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<OutputFormat>,
        ] $($($rest)*)?);
    };
    // Document types: the command line's `--type` list, refused by the tool's own check.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : Option<Vec<DocType>> $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            #[cfg_attr(feature = "clap", arg(skip))]
            $(#[$m])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<Vec<DocType>>,
        ] $($($rest)*)?);
    };
    // An optional switch: `--flag` alone is true, `--flag=false` false.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : Option<bool> $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            #[cfg_attr(feature = "clap", arg(
                long,
                num_args = 0..=1,
                require_equals = true,
                default_missing_value = "true",
                value_name = "true|false"
            ))]
            $(#[$m])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<bool>,
        ] $($($rest)*)?);
    };
    // An optional list: a comma-separated `--flag`.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : Option<Vec<String>> $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            #[cfg_attr(feature = "clap", arg(
                long,
                value_delimiter = ',',
                value_parser = $crate::tools::kit::trimmed
            ))]
            $(#[$m])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<Vec<String>>,
        ] $($($rest)*)?);
    };
    // An optional integer: absent, null, a number or a string holding one.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : Option<i64> $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            #[cfg_attr(feature = "clap", arg(long))]
            $(#[$m])*
            #[serde(
                default,
                deserialize_with = "crate::tools::kit::lenient_int",
                skip_serializing_if = "Option::is_none"
            )]
            pub $field: Option<i64>,
        ] $($($rest)*)?);
    };
    // Any other optional parameter: absent or null is `None`.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : Option<$ty:ty> $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            #[cfg_attr(feature = "clap", arg(long))]
            $(#[$m])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<$ty>,
        ] $($($rest)*)?);
    };
    // A parameter taken as written.
    (@field $head:tt [$($done:tt)*]
        $(#[$m:meta])* pub $field:ident : $ty:ty $(, $($rest:tt)*)?) => {
        $crate::tools::kit::tool_params!(@field $head [$($done)*
            $(#[$m])*
            pub $field: $ty,
        ] $($($rest)*)?);
    };
    (@field [$(#[$meta:meta])* $name:ident] [$($done:tt)*]) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
        )]
        #[cfg_attr(feature = "clap", derive(clap::Args))]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($done)*
        }

        impl $crate::tools::kit::ToolParams for $name {
            const NAME: &'static str = SPEC.name;
        }
    };
}

pub(crate) use tool_params;

/// One item of a comma-separated command-line list, without the blanks around it (`pdf, md`).
#[cfg(feature = "clap")]
pub(crate) fn trimmed(item: &str) -> std::result::Result<String, std::convert::Infallible> {
    Ok(item.trim().to_string())
}

/// A successful tool result before the footer is added, with what it counted.
#[derive(Debug)]
pub struct Rendered {
    /// The answer.
    pub(crate) body: Body,
    /// What a finding tool counted (see `ToolOutput::matched`).
    pub(crate) matched: Option<u64>,
}

/// The body of a [`Rendered`] answer.
#[derive(Debug)]
pub(crate) enum Body {
    Markdown(String),
    Json(Value),
}

impl Rendered {
    /// A Markdown answer.
    pub fn markdown(text: String) -> Rendered {
        Rendered {
            body: Body::Markdown(text),
            matched: None,
        }
    }

    /// A JSON answer.
    pub fn json(value: Value) -> Rendered {
        Rendered {
            body: Body::Json(value),
            matched: None,
        }
    }

    /// The same answer with what it counted.
    pub fn counting(mut self, matched: u64) -> Rendered {
        self.matched = Some(matched);
        self
    }
}

/// A tool's result as its caller gets it: a success with the `[meta] now=` footer (JSON
/// `_meta.now`), or the error in `error_format` (`[CODE] message` or the JSON error object).
/// Every tool of every front end answers through this, the gateway's own included.
pub fn finish(result: Result<Rendered>, error_format: OutputFormat) -> ToolOutput {
    let now = linkly_core::now_millis();
    match result {
        Ok(Rendered { body, matched }) => ToolOutput::success(match body {
            Body::Markdown(body) => finish_markdown(body, now),
            Body::Json(value) => finish_json(value, now),
        })
        .with_matched(matched),
        Err(err) => {
            // Internal failures were logged as errors where they were made; the caller's
            // own errors are part of the conversation, not of the server's health.
            if !err.is_internal() {
                tracing::debug!(code = %err.code, message = %err.message, "tool call refused");
            }
            ToolOutput::failure(match error_format {
                OutputFormat::Json => err.to_json().to_string(),
                OutputFormat::Markdown => err.to_string(),
            })
        }
    }
}

/// The format a call's errors are answered in: its `output_format` when that can be read at
/// all, else Markdown.
pub fn error_format(args: &Value) -> OutputFormat {
    args.get("output_format")
        .and_then(Value::as_str)
        .and_then(|f| OutputFormat::parse(Some(f)).ok())
        .unwrap_or_default()
}

/// The JSON schema of a parameter type, as agents and validating clients read it.
///
/// The derive's bounds (`minimum`/`maximum`, `minItems`/`maxItems`), choices (`enum`) and
/// defaults (`default`) come from each field's `#[schemars(...)]` attributes. Then a default
/// that only means "absent" (`null`) is dropped, and so are the Rust-width `format`s (`int64`,
/// `uint`), which are no JSON Schema vocabulary. An optional parameter stays nullable (an
/// explicit `null` is "not given", as models often send it), so a nullable choice lists
/// `null` among its values.
pub fn schema_of<T: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut schema =
        serde_json::to_value(schema).unwrap_or_else(|_| serde_json::json!({"type": "object"}));
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for property in properties.values_mut() {
            plain_property(property);
        }
    }
    schema
}

/// Cleans one property schema (see [`schema_of`]).
fn plain_property(property: &mut Value) {
    let Some(map) = property.as_object_mut() else {
        return;
    };
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    let types: Vec<Value> = match map.get("type") {
        Some(Value::Array(types)) => types.clone(),
        Some(t) => vec![t.clone()],
        None => Vec::new(),
    };
    if types.iter().any(|t| t == "integer" || t == "number") {
        map.remove("format");
    }
    if types.iter().any(|t| t == "null")
        && let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Schema transform of a `doc_types` parameter: its items are the contract's type tokens
/// ([`linkly_core::DocType::ALL`]; the tools also take them in any case).
pub(crate) fn doc_type_items(schema: &mut schemars::Schema) {
    let tokens: Vec<&str> = linkly_core::DocType::ALL
        .iter()
        .map(|t| t.as_str())
        .collect();
    schema.insert(
        "items".into(),
        serde_json::json!({"type": "string", "enum": tokens}),
    );
}

/// Deserialises a `doc_types` parameter: a list of the contract's type tokens, in any case.
/// Every unknown token is named in one refusal ([`parse_doc_types`]), which [`parse_args`]
/// shows as it is.
pub(crate) fn doc_types_param<'de, D>(
    deserializer: D,
) -> std::result::Result<Option<Vec<DocType>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<Vec<String>>::deserialize(deserializer)?
        .map(|tokens| {
            parse_doc_types("doc_types", &tokens).map_err(|e| serde::de::Error::custom(e.message))
        })
        .transpose()
}

/// Deserialises an optional integer parameter leniently: a JSON integer, a string holding
/// one (`"5"`, a common model output) or `null`. Anything else fails, and `parse_args`
/// names the parameter in the `INVALID_ARGUMENT`. Ranges are still checked by the tool.
pub fn lenient_int<'de, D>(deserializer: D) -> std::result::Result<Option<i64>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::de::{Error, Unexpected};
    let expected = "an integer (or a string holding one)";
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| D::Error::invalid_value(Unexpected::Other(&n.to_string()), &expected)),
        Some(Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| D::Error::invalid_value(Unexpected::Str(&s), &expected)),
        Some(Value::Bool(b)) => Err(D::Error::invalid_type(Unexpected::Bool(b), &expected)),
        Some(Value::Array(_)) => Err(D::Error::invalid_type(Unexpected::Seq, &expected)),
        Some(Value::Object(_)) => Err(D::Error::invalid_type(Unexpected::Map, &expected)),
    }
}

/// Deserialises arguments, naming the offending parameter on failure. A value outside a
/// parameter's fixed set (its schema's `enum`: a [`crate::choice`] type) is refused as
/// [`check_choice`] refuses it, naming the parameter and the allowed values.
pub(crate) fn parse_args<T: DeserializeOwned + JsonSchema>(args: Value) -> Result<T> {
    if !args.is_object() {
        let got = match &args {
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            _ => "nothing",
        };
        return Err(ToolError::invalid(format!(
            "invalid arguments: a tool takes an object of named arguments (got {got})"
        )));
    }
    serde_path_to_error::deserialize::<_, T>(&args).map_err(|e| {
        let path = e.path().to_string();
        let name = path.split(['[', '.']).next().unwrap_or_default();
        if let Some(err) = choice_error::<T>(name, args.get(name)) {
            return err;
        }
        let inner = e.into_inner().to_string();
        if path.is_empty() || path == "." {
            ToolError::invalid(format!("invalid arguments: {inner}"))
        } else {
            // A refusal that names its parameter already (`doc_types has …`) is shown as it is.
            let message = if inner.starts_with(&format!("{path} ")) {
                inner
            } else {
                format!("{path}: {inner}")
            };
            ToolError::invalid(message).with_details(serde_json::json!({ "parameter": path }))
        }
    })
}

/// The refusal of a value outside a parameter's listed values, when the parameter lists them.
fn choice_error<T: JsonSchema>(name: &str, given: Option<&Value>) -> Option<ToolError> {
    let schema = schema_of::<T>();
    let property = schema.get("properties")?.get(name)?;
    let listed = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let received = given?.as_str()?;
    let allowed = listed(property.get("enum")?);
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    check_choice(name, received, &allowed).err()
}

/// Renders a response in the requested format.
pub(crate) fn render<T: serde::Serialize>(
    format: crate::OutputFormat,
    response: &T,
    markdown: impl FnOnce(&T) -> String,
) -> Result<Rendered> {
    Ok(match format {
        crate::OutputFormat::Json => {
            Rendered::json(serde_json::to_value(response).map_err(ToolError::internal)?)
        }
        crate::OutputFormat::Markdown => Rendered::markdown(markdown(response)),
    })
}

/// Parses a document id parameter.
pub(crate) fn parse_doc_id(linkly: &Linkly, name: &str, value: &str) -> Result<linkly_core::DocId> {
    linkly.parse_doc_address(value).ok_or_else(|| {
        ToolError::invalid(format!(
            "{name} must be a document id like {:?} (got {value:?})",
            linkly.doc_example()
        ))
    })
}

/// Looks up a document, or `DOC_NOT_FOUND`.
pub(crate) fn find_doc(
    linkly: &Linkly,
    raw: &str,
    id: linkly_core::DocId,
) -> Result<linkly_index::DocRecord> {
    // Checked against the file first: a changed file is re-indexed, a deleted one is gone.
    linkly
        .fresh_doc(id)?
        .ok_or_else(|| ToolError::doc_not_found(raw))
}

/// A document's text, or `CONTENT_UNREADABLE` when it has a skip reason.
pub(crate) fn readable_content(linkly: &Linkly, doc: &linkly_index::DocRecord) -> Result<String> {
    if let Some(reason) = &doc.skip_reason {
        return Err(ToolError::new(
            linkly_core::ErrorCode::ContentUnreadable,
            format!(
                "{} ({}) has no readable content: {reason}. It is indexed by name only; do not read or grep it",
                doc.path,
                linkly.doc_address(doc.id)
            ),
        ));
    }
    Ok(linkly.corpus().content(doc.id)?.unwrap_or_default())
}

/// The document types `tokens` name (the contract's tokens, in any case); an unknown token is
/// refused with every unknown one named, as the parameter `name`.
pub fn parse_doc_types(name: &str, tokens: &[String]) -> Result<Vec<DocType>> {
    let mut bad = Vec::new();
    let mut out = Vec::new();
    for t in tokens {
        match DocType::from_token(t) {
            Ok(d) => out.push(d),
            Err(_) => bad.push(format!("{t:?}")),
        }
    }
    if !bad.is_empty() {
        return Err(ToolError::invalid(format!(
            "{name} has unknown type(s) {}; supported: {}",
            bad.join(", "),
            DocType::supported_list()
        )));
    }
    Ok(out)
}

/// Parses an optional time bound.
pub(crate) fn parse_bound(name: &str, value: Option<&str>) -> Result<Option<i64>> {
    value
        .map(|v| {
            parse_time(v).map_err(|_| {
                ToolError::invalid(format!(
                    "{name} must be an ISO 8601 date or time in UTC, like \"2024-01-31\" or \"2024-01-31T12:00:00Z\" (got {v:?})"
                ))
            })
        })
        .transpose()
}

/// Refuses a time window whose start is later than its end: nothing could match it.
pub(crate) fn check_window(
    raw_after: &Option<String>,
    after: Option<i64>,
    raw_before: &Option<String>,
    before: Option<i64>,
) -> Result<()> {
    if let (Some(a), Some(b)) = (after, before)
        && a > b
    {
        return Err(ToolError::invalid(format!(
            "modified_after ({}) is later than modified_before ({}): no document can match; swap \
             the two values or drop one",
            raw_after.as_deref().unwrap_or_default(),
            raw_before.as_deref().unwrap_or_default()
        )));
    }
    Ok(())
}
