// Package tune tunes a rule-based controller fairly: it expands a grid of
// the rule's parameters into controller specs, and from the paired
// evaluation of every grid point on development placements (never the
// evaluation placements 101–110) it chooses the configuration with the
// least CPU among those within a violation budget in every cell.
//
// Units: violation rates are fractions, CPU in millicores, relative CPU a
// ratio to the rule's default configuration. The package runs nothing
// itself: `eval tune` runs the grid with package paired and hands the
// summary to Choose, so the choice is a pure function of the summary and
// deterministic.
package tune
