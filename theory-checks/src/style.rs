//! The figures' visual language, in one table: each method one colour and one marker in every
//! figure of the report; a second grid dimension (σ, d, s, n, a variant of one method) by line
//! style ([`Dash`]) or by small multiples (one panel per value), never by colour alone.

use plotters::style::RGBColor;

/// A method as the figures name it (several library algorithms draw as one method: the IFCA
/// authors' protocol and our IFCA with gradient averaging are both "IFCA").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// SXY22's two-phase algorithm.
    TwoPhase,
    /// IFCA: the official protocol, IFCA with gradient averaging, and SXY22's Phase 2 from a
    /// random initialisation ("IFCA as SXY22 ran it").
    Ifca,
    /// IFCA with model averaging (GCYR20 Algorithm 2, option II).
    IfcaAveraging,
    /// Phase 2 from the true models or labels.
    Oracle,
    /// Vanilla FedAvg / FedProx with one model.
    FedAvg,
    /// Local estimates, k-means, FedAvg within the clusters.
    OneShot,
    /// SR-FCA.
    SrFca,
    /// Sattler et al.'s clustered FL.
    Cfl,
    /// Per-client least squares.
    Local,
    /// FedSoft (Ruan & Joe-Wong 2022).
    FedSoft,
}

/// The point marker of a method or a theory figure's series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Marker {
    /// Filled circle.
    Dot,
    /// Hollow circle.
    Ring,
    /// Diagonal cross.
    Cross,
    /// Hollow square.
    Square,
    /// Hollow triangle.
    Triangle,
    /// Hollow diamond.
    Diamond,
    /// Upright cross.
    Plus,
    /// Filled square.
    FilledSquare,
    /// Filled triangle.
    FilledTriangle,
    /// Filled diamond.
    FilledDiamond,
}

impl Marker {
    /// The hollow counterpart (calibration points of the theory figures).
    pub fn hollow(self) -> Self {
        match self {
            Marker::Dot => Marker::Ring,
            Marker::FilledSquare => Marker::Square,
            Marker::FilledTriangle => Marker::Triangle,
            Marker::FilledDiamond => Marker::Diamond,
            other => other,
        }
    }
}

/// Line style: the second encoding after colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dash {
    /// Solid.
    Solid,
    /// Dashed.
    Dashed,
    /// Dotted.
    Dotted,
    /// Dash-dot.
    DashDot,
    /// Dash-dot-dot.
    DashDotDot,
}

/// Line styles in the order a figure assigns them.
pub const DASHES: [Dash; 5] = [
    Dash::Solid,
    Dash::Dashed,
    Dash::Dotted,
    Dash::DashDot,
    Dash::DashDotDot,
];

impl Dash {
    /// The SVG `stroke-dasharray` (`None`: solid).
    pub fn array(self) -> Option<&'static str> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some("8 5"),
            Dash::Dotted => Some("2 4"),
            Dash::DashDot => Some("9 4 2 4"),
            Dash::DashDotDot => Some("10 3 2 3 2 3"),
        }
    }
    /// The name a caption uses.
    pub fn name(self) -> &'static str {
        match self {
            Dash::Solid => "solid",
            Dash::Dashed => "dashed",
            Dash::Dotted => "dotted",
            Dash::DashDot => "dash-dot",
            Dash::DashDotDot => "dash-dot-dot",
        }
    }
}

/// How one series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Style {
    /// Colour.
    pub color: RGBColor,
    /// Line style (of the connecting line, when there is one).
    pub dash: Dash,
    /// Point marker (`None`: a line without markers).
    pub marker: Option<Marker>,
}

/// The table: each method's name, colour and marker. Colours from the Tableau 10 palette.
pub const METHODS: [(Method, &str, RGBColor, Marker); 10] = [
    (
        Method::TwoPhase,
        "two-phase",
        RGBColor(31, 119, 180),
        Marker::Dot,
    ),
    (Method::Ifca, "IFCA", RGBColor(214, 39, 40), Marker::Cross),
    (
        Method::IfcaAveraging,
        "IFCA model averaging",
        RGBColor(148, 103, 189),
        Marker::Square,
    ),
    (
        Method::Oracle,
        "oracle",
        RGBColor(90, 90, 90),
        Marker::Diamond,
    ),
    (
        Method::FedAvg,
        "FedAvg",
        RGBColor(255, 127, 14),
        Marker::Triangle,
    ),
    (
        Method::OneShot,
        "one-shot",
        RGBColor(44, 160, 44),
        Marker::Ring,
    ),
    (
        Method::SrFca,
        "SR-FCA",
        RGBColor(140, 86, 75),
        Marker::FilledSquare,
    ),
    (Method::Cfl, "CFL", RGBColor(227, 119, 194), Marker::Plus),
    (
        Method::Local,
        "local",
        RGBColor(188, 189, 34),
        Marker::FilledTriangle,
    ),
    (
        Method::FedSoft,
        "FedSoft",
        RGBColor(23, 190, 207),
        Marker::FilledDiamond,
    ),
];

impl Method {
    fn row(self) -> &'static (Method, &'static str, RGBColor, Marker) {
        METHODS
            .iter()
            .find(|r| r.0 == self)
            .expect("every method has a row")
    }
    /// Name in captions.
    pub fn name(self) -> &'static str {
        self.row().1
    }
    /// Colour.
    pub fn color(self) -> RGBColor {
        self.row().2
    }
    /// Marker.
    pub fn marker(self) -> Marker {
        self.row().3
    }
    /// The method a library algorithm draws as (`model_averaging`: IFCA's option II).
    pub fn of(kind: fedmix::params::AlgorithmKind, model_averaging: bool) -> Self {
        use fedmix::params::AlgorithmKind as K;
        match kind {
            K::TwoPhase => Method::TwoPhase,
            K::Phase2 | K::IfcaOfficial => Method::Ifca,
            K::Ifca if model_averaging => Method::IfcaAveraging,
            K::Ifca => Method::Ifca,
            K::Oracle | K::OracleLabels => Method::Oracle,
            K::Fedavg => Method::FedAvg,
            K::OneShot => Method::OneShot,
            K::SrFca => Method::SrFca,
            K::Cfl => Method::Cfl,
            K::FedSoft => Method::FedSoft,
            K::Local => Method::Local,
        }
    }
}

/// Colours of a theory figure's cases (its series are instances of one bound: no method is
/// drawn there, so they reuse the Tableau palette the methods take their colours from; a
/// figure never mixes the two).
pub const CASES: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The colour of a bound that applies to every point of a panel.
pub const BOUND: RGBColor = RGBColor(40, 40, 40);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_has_its_own_colour_and_marker() {
        for (i, a) in METHODS.iter().enumerate() {
            for b in &METHODS[..i] {
                assert_ne!(a.2, b.2, "{} and {} share a colour", a.1, b.1);
                assert_ne!(a.3, b.3, "{} and {} share a marker", a.1, b.1);
            }
        }
        use fedmix::params::AlgorithmKind as K;
        assert_eq!(Method::of(K::IfcaOfficial, true), Method::Ifca);
        assert_eq!(Method::of(K::Ifca, true), Method::IfcaAveraging);
        assert_eq!(Method::of(K::Ifca, false), Method::Ifca);
    }
}
