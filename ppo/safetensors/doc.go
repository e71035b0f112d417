// Package safetensors reads and writes the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON mapping each tensor name to its dtype,
// shape and [begin, end) byte offsets into the data section (plus an
// optional "__metadata__" object of strings), then the raw little-endian,
// row-major tensor data.
//
// Encode writes tensors sorted by name, contiguously, and pads the header
// with spaces to a multiple of 8 bytes, so equal inputs give equal bytes.
// Decode validates everything before returning: header bounds, JSON shape,
// known dtypes, shapes that match their byte ranges, and byte ranges that
// tile the data section exactly (no gaps, overlaps or trailing bytes). It
// never panics on malformed input (FuzzDecode). The package does no I/O
// beyond the io.Writer given to Encode and holds no state.
package safetensors
