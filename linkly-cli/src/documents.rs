//! The document tools as commands: `search`, `outline`, `grep` and `read`. Each command line
//! is the tool's own params (plus what the command line fills: ids, `--type`); each calls it
//! (see `call`).

use std::process::ExitCode;

use linkly_core::DataDir;
use linkly_tools::{GrepParams, OutlineParams, ReadParams, SearchParams};

use crate::args::{GrepArgs, ReadArgs, SearchArgs};
use crate::call::{self, expand_ids, read_once, read_per_id};
use crate::output::Printer;

/// `linkly search`.
pub(crate) fn search(data: &DataDir, a: SearchArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let doc_types = match call::doc_types(a.doc_types.as_deref(), printer) {
        Ok(types) => types,
        Err(code) => return Ok(code),
    };
    let params = SearchParams {
        doc_types,
        ..a.params
    };
    read_once(data, printer, &params)
}

/// `linkly outline`.
pub(crate) fn outline(
    data: &DataDir,
    params: OutlineParams,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let params = OutlineParams {
        doc_ids: expand_ids(params.doc_ids)?,
        ..params
    };
    read_once(data, printer, &params)
}

/// `linkly grep`: one call per document.
pub(crate) fn grep(data: &DataDir, a: GrepArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let ids = expand_ids(a.ids)?;
    read_per_id(data, printer, "grep", &ids, |id| GrepParams {
        doc_id: id.to_string(),
        ..a.params.clone()
    })
}

/// `linkly read`: one call per document.
pub(crate) fn read(data: &DataDir, a: ReadArgs, printer: Printer) -> anyhow::Result<ExitCode> {
    let ids = expand_ids(a.ids)?;
    read_per_id(data, printer, "read", &ids, |id| ReadParams {
        doc_id: id.to_string(),
        ..a.params.clone()
    })
}
