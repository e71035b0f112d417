// Package policyset is the manifest of a policies directory: which named
// sets of trained policies it holds, what each is for, and the models a
// server derives from them. Both serve and eval read it.
//
// # Layout
//
// A policies directory with a manifest holds, beside manifest.json
// (ManifestName), one directory per set and in it one per profile:
//
//	<dir>/manifest.json
//	<dir>/<set>/<profile>/policy.json         (ppo/policy's card)
//	<dir>/<set>/<profile>/policy.safetensors  (its weights)
//
// The manifest is {"sets": [{"name", "purpose", "recipe", "scenario",
// "profiles", "headline", "diagnostics"}, …]}. Decode is strict: an
// unknown key, a duplicate key, a value of the wrong type, trailing data
// or a missing required key (name, purpose, profiles) is an error naming
// the key by its path, e.g. sets[1].diagnostics.pred.entropy_fraction.
// Set and profile names are what a URL segment and a directory name may
// be (ValidName); a set lists each profile once, diagnostics only for its
// profiles, and no two sets share a name or a model name.
//
// # Model names
//
// A server names the model of profile p in set s p when s is DefaultSet
// ("default") and s-p otherwise (ModelName): pred, paper-pred,
// calibrated-etl.
//
// # Files
//
// Read opens the manifest as a regular file of at most MaxManifestBytes
// (policy.ReadRegular), so a FIFO or a huge file in its place is refused
// rather than blocking or filling memory. Nothing here reads the clock or
// keeps state; a Manifest is a value, safe to share once decoded.
package policyset
