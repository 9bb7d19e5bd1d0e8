//! The JSON-RPC error codes the server answers with beyond `lsp_server::ErrorCode`'s.

/// A valid request that could not be carried out (LSP 3.17 `RequestFailed`): a document that
/// is not open, an edit of the read-only stdlib.
pub const REQUEST_FAILED: i32 = -32803;
