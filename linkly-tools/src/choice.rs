//! Parameters with a fixed set of values as Rust enums: [`choice!`] declares one, with its
//! tokens as serde names, a JSON schema listing them (`{"type": "string", "enum": [...]}`), and
//! (with the `clap` feature) `clap::ValueEnum`, so the command line takes the tool's own type.
//! A token outside the set is refused when the arguments are read, with the message and
//! details of every choice (`tools::kit::parse_args`).

/// Declares a choice enum: `choice! { /// doc  pub enum Sort { /// doc  Recent = "recent", … } }`.
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $token:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        $vis enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $token)]
                #[cfg_attr(feature = "clap", value(name = $token))]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in the order of the schema.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value a token names, if any (`"newest"` → `Newest`).
            pub fn from_token(token: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|c| c.as_str() == token)
            }

            /// The token, as JSON and the command line write it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $token,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({"type": "string", "enum": [$($token),+]})
            }
        }
    };
}

pub(crate) use choice;
