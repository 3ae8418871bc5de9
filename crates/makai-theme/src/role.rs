//! The roles a theme colours, by pi's names.

macro_rules! roles {
    ($( $variant:ident = $name:literal $(, or $fallback:ident)? ; )*) => {
        /// A part of the interface a theme gives a colour (pi's `colors`
        /// keys). The optional ones name the role they take the colour of
        /// when a theme leaves them out ([`Role::fallback`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Role {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        impl Role {
            /// Every role, in pi's order.
            pub const ALL: &'static [Role] = &[$(Role::$variant),*];

            /// pi's name of the role (a key of a theme's `colors`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Role::$variant => $name,)*
                }
            }

            /// The role whose colour this one takes when a theme leaves it
            /// out; `None` for the roles a theme must give.
            pub fn fallback(self) -> Option<Role> {
                match self {
                    $(Role::$variant => roles!(@fallback $($fallback)?),)*
                }
            }
        }
    };
    (@fallback $fallback:ident) => { Some(Role::$fallback) };
    (@fallback) => { None };
}

roles! {
    Accent = "accent";
    Border = "border";
    BorderAccent = "borderAccent";
    BorderMuted = "borderMuted";
    Success = "success";
    Error = "error";
    Warning = "warning";
    Muted = "muted";
    Dim = "dim";
    Text = "text";
    ThinkingText = "thinkingText";
    SelectedBg = "selectedBg";
    UserMessageBg = "userMessageBg";
    UserMessageText = "userMessageText";
    CustomMessageBg = "customMessageBg";
    CustomMessageText = "customMessageText";
    CustomMessageLabel = "customMessageLabel";
    ToolPendingBg = "toolPendingBg";
    ToolSuccessBg = "toolSuccessBg";
    ToolErrorBg = "toolErrorBg";
    ToolTitle = "toolTitle";
    ToolOutput = "toolOutput";
    MdHeading = "mdHeading";
    MdLink = "mdLink";
    MdLinkUrl = "mdLinkUrl";
    MdCode = "mdCode";
    MdCodeBlock = "mdCodeBlock";
    MdCodeBlockBorder = "mdCodeBlockBorder";
    MdQuote = "mdQuote";
    MdQuoteBorder = "mdQuoteBorder";
    MdHr = "mdHr";
    MdListBullet = "mdListBullet";
    ToolDiffAdded = "toolDiffAdded";
    ToolDiffRemoved = "toolDiffRemoved";
    ToolDiffContext = "toolDiffContext";
    SyntaxComment = "syntaxComment";
    SyntaxKeyword = "syntaxKeyword";
    SyntaxFunction = "syntaxFunction";
    SyntaxVariable = "syntaxVariable";
    SyntaxString = "syntaxString";
    SyntaxNumber = "syntaxNumber";
    SyntaxType = "syntaxType";
    SyntaxOperator = "syntaxOperator";
    SyntaxPunctuation = "syntaxPunctuation";
    ThinkingOff = "thinkingOff";
    ThinkingMinimal = "thinkingMinimal";
    ThinkingLow = "thinkingLow";
    ThinkingMedium = "thinkingMedium";
    ThinkingHigh = "thinkingHigh";
    ThinkingXhigh = "thinkingXhigh";
    BashMode = "bashMode";
    ThinkingMax = "thinkingMax", or ThinkingXhigh;
    ScrollbarTrack = "scrollbarTrack", or Muted;
    ScrollbarThumb = "scrollbarThumb", or Text;
    SearchMatchBg = "searchMatchBg", or SelectedBg;
    SearchMatchText = "searchMatchText", or Text;
    ScrollToEndIndicatorBg = "scrollToEndIndicatorBg", or SelectedBg;
    ScrollToEndIndicatorText = "scrollToEndIndicatorText", or Text;
}

impl Role {
    /// The role pi names `name`.
    pub fn from_name(name: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.name() == name)
    }

    /// Its place in [`Role::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}
