//! `list_libraries`: the libraries the user defined, with their ids and sizes. No parameters.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::library::LibraryScope;
use crate::render::{one_line, thousands};
use crate::tools::kit::{Reach, Rendered, ToolSpec, parse_args, schema_of};
use crate::{Linkly, Result};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "list_libraries",
    title: "List libraries",
    description: "List the user's libraries: named collections of folders (and optionally note \
        tags), each with its local://<id>, description, document count and folders. Call it when \
        the user asks what libraries they have, and before passing `library` to search, explore, \
        find_paths or list, to get the name right. Without a library every tool covers all \
        indexed content.",
    read_only: true,
    input_schema: schema_of::<ListLibrariesParams>,
    output_schema: None,
    reach: Reach::Libraries,
    idempotent: true,
    run,
};

crate::tools::kit::tool_params! {
    /// `list_libraries` takes no parameters.
    pub struct ListLibrariesParams {
    }
}

/// One library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LibraryInfo {
    /// The name.
    pub name: String,
    /// `local://<id>`.
    pub id: String,
    /// What it holds.
    pub description: String,
    /// Indexed documents in its folders, plus the indexed notes its tag filter takes in.
    pub doc_count: u64,
    /// Its folders.
    pub folder_count: usize,
    /// The folders.
    pub folders: Vec<String>,
    /// Its note tag filter (notes carrying all these tags belong to it).
    pub tags: Vec<String>,
}

/// The response of `list_libraries`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LibrariesResponse {
    /// The libraries, in the order of the config file.
    pub libraries: Vec<LibraryInfo>,
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    let _: ListLibrariesParams = parse_args(args)?;
    Ok(Rendered::markdown(linkly.list_libraries()?.to_markdown()))
}

impl Linkly {
    /// The names of the libraries this caller may read, in the configuration's order: what a
    /// form's library choice needs, without `list_libraries`' counts (a query per library).
    pub fn library_names(&self) -> Vec<String> {
        let shared = crate::audience::current();
        self.config()
            .libraries
            .iter()
            .filter(|l| shared.as_ref().is_none_or(|s| s.contains(&l.name)))
            .map(|l| l.name.clone())
            .collect()
    }

    /// Runs `list_libraries`.
    pub fn list_libraries(&self) -> Result<LibrariesResponse> {
        let mut libraries = Vec::new();
        let shared = crate::audience::current();
        let config = self.config();
        let visible = config
            .libraries
            .iter()
            .filter(|l| shared.as_ref().is_none_or(|s| s.contains(&l.name)));
        for lib in visible {
            let doc_count = self
                .corpus()
                .catalog_count(&LibraryScope::of(self, lib)?.filter())?;
            libraries.push(LibraryInfo {
                name: lib.name.clone(),
                id: lib.address(),
                description: lib.description.clone(),
                doc_count,
                folder_count: lib.folders.len(),
                folders: lib
                    .folders
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect(),
                tags: lib.tags.clone(),
            });
        }
        Ok(LibrariesResponse { libraries })
    }
}

impl LibrariesResponse {
    /// The Markdown form: `# Libraries`, then one line per library.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# Libraries\n\n");
        if self.libraries.is_empty() {
            out.push_str(
                "No libraries are defined; every tool covers all indexed content. The user can \
                 define one with `linkly library add <name> <folder>…`.\n",
            );
            return out;
        }
        for l in &self.libraries {
            let description = if l.description.is_empty() {
                "no description".to_string()
            } else {
                one_line(&l.description)
            };
            out.push_str(&format!(
                "- **{}** ({}): {} ({} docs, {} folder{})",
                l.name,
                l.id,
                description,
                thousands(l.doc_count),
                l.folder_count,
                if l.folder_count == 1 { "" } else { "s" }
            ));
            if !l.tags.is_empty() {
                let tags: Vec<String> = l.tags.iter().map(|t| format!("#{t}")).collect();
                out.push_str(&format!(" + notes tagged {}", tags.join(" ")));
            }
            out.push('\n');
            for f in &l.folders {
                out.push_str(&format!("  - {f}\n"));
            }
        }
        out.push_str("\nPass a name or id as `library` to search, explore, find_paths or list.\n");
        out
    }
}
