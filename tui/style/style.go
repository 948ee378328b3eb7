// Package style holds the dashboard's one set of styles, built once for a
// dark or a light terminal background and passed down to every pane.
package style

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Styles are every style the dashboard draws with. Build them with Default;
// the zero value draws plain text.
type Styles struct {
	// Dark reports whether the styles were built for a dark background.
	Dark bool

	Title       lipgloss.Style
	TabActive   lipgloss.Style
	TabInactive lipgloss.Style
	Badge       lipgloss.Style
	BadgeWarn   lipgloss.Style
	Header      lipgloss.Style
	Label       lipgloss.Style
	Faint       lipgloss.Style
	Bold        lipgloss.Style
	OK          lipgloss.Style
	Warn        lipgloss.Style
	Bad         lipgloss.Style
	Accent      lipgloss.Style
	Selected    lipgloss.Style
	CutLine     lipgloss.Style
	Group       lipgloss.Style
	Remove      lipgloss.Style
	Flash       lipgloss.Style
	FlashError  lipgloss.Style
	Modal       lipgloss.Style
	ModalTitle  lipgloss.Style

	// GaugeFill, GaugeHot and GaugeEmpty colour the cells of a gauge below
	// the low threshold, above it, and the unused part.
	GaugeFill  lipgloss.Style
	GaugeHot   lipgloss.Style
	GaugeEmpty lipgloss.Style
	// Marker draws threshold markers on gauges.
	Marker lipgloss.Style
	// EvictionMarker draws the eviction line on the image-fs gauge.
	EvictionMarker lipgloss.Style
}

// Default returns the styles for a dark (true) or light background. The
// colours are chosen to read on both; only their shades change.
func Default(dark bool) Styles {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkC string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkC)) }
	accent := c("#5B3FD0", "#A99BFF")
	green := c("#1A7F37", "#3FB950")
	yellow := c("#8A5A00", "#E3B341")
	red := c("#C62828", "#FF7B72")
	faint := c("#5F6B76", "#8B949E")
	selBg := c("#D8DEE4", "#343B48")
	fg := c("#1F2328", "#E6EDF3")

	return Styles{
		Dark:           dark,
		Title:          lipgloss.NewStyle().Bold(true).Foreground(accent),
		TabActive:      lipgloss.NewStyle().Bold(true).Underline(true).Foreground(accent),
		TabInactive:    lipgloss.NewStyle().Foreground(faint),
		Badge:          lipgloss.NewStyle().Bold(true).Foreground(green),
		BadgeWarn:      lipgloss.NewStyle().Bold(true).Foreground(yellow),
		Header:         lipgloss.NewStyle().Bold(true).Foreground(fg),
		Label:          lipgloss.NewStyle().Foreground(faint),
		Faint:          lipgloss.NewStyle().Foreground(faint),
		Bold:           lipgloss.NewStyle().Bold(true),
		OK:             lipgloss.NewStyle().Foreground(green),
		Warn:           lipgloss.NewStyle().Foreground(yellow),
		Bad:            lipgloss.NewStyle().Foreground(red),
		Accent:         lipgloss.NewStyle().Foreground(accent),
		Selected:       lipgloss.NewStyle().Bold(true).Background(selBg).Foreground(fg),
		CutLine:        lipgloss.NewStyle().Bold(true).Foreground(yellow),
		Group:          lipgloss.NewStyle().Bold(true).Foreground(accent),
		Remove:         lipgloss.NewStyle().Foreground(red),
		Flash:          lipgloss.NewStyle().Foreground(green),
		FlashError:     lipgloss.NewStyle().Bold(true).Foreground(red),
		Modal:          lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1),
		ModalTitle:     lipgloss.NewStyle().Bold(true).Foreground(accent),
		GaugeFill:      lipgloss.NewStyle().Foreground(green),
		GaugeHot:       lipgloss.NewStyle().Foreground(red),
		GaugeEmpty:     lipgloss.NewStyle().Foreground(faint),
		Marker:         lipgloss.NewStyle().Bold(true).Foreground(yellow),
		EvictionMarker: lipgloss.NewStyle().Bold(true).Foreground(red),
	}
}
