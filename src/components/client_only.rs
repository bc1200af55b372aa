//! Views the server never draws, and the type erasure used below them.
//!
//! The transcript's rows are built in the browser from the session it loads; the server renders an empty
//! transcript. Hydration code for them would never run, yet Leptos compiles it for every view type reachable from a
//! hydrated parent, and `AnyView` keeps two hydration entry points alive for every type it erases. Under
//! [`ClientOnly`] nothing is hydrated, and [`RowView`] erases view types with only what building and updating need:
//! together they keep the rows' hydration code out of the WASM.

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
use leptos::prelude::*;
use leptos::tachys::html::attribute::Attribute;
use leptos::tachys::html::attribute::any_attribute::AnyAttribute;
use leptos::tachys::hydration::Cursor;
use leptos::tachys::renderer::Rndr;
use leptos::tachys::renderer::types::{Element, Node, Placeholder};
use leptos::tachys::view::add_attr::AddAnyAttr;
use leptos::tachys::view::{Mountable, Position, PositionState, Render, RenderHtml};

/// A view the server leaves out (it renders a placeholder) and the browser builds, also while hydrating.
pub struct ClientOnly<V>(pub V);

pub struct ClientOnlyState<S> {
    view: S,
    marker: Placeholder,
}

impl<V: Render> Render for ClientOnly<V> {
    type State = ClientOnlyState<V::State>;

    fn build(self) -> Self::State {
        ClientOnlyState { view: self.0.build(), marker: Rndr::create_placeholder() }
    }

    fn rebuild(self, state: &mut Self::State) {
        self.0.rebuild(&mut state.view);
    }
}

impl<S: Mountable> Mountable for ClientOnlyState<S> {
    fn unmount(&mut self) {
        self.view.unmount();
        self.marker.unmount();
    }

    fn mount(&mut self, parent: &Element, marker: Option<&Node>) {
        self.view.mount(parent, marker);
        self.marker.mount(parent, marker);
    }

    fn insert_before_this(&self, child: &mut dyn Mountable) -> bool {
        self.view.insert_before_this(child) || self.marker.insert_before_this(child)
    }

    fn elements(&self) -> Vec<Element> {
        self.view.elements()
    }
}

impl<V: AddAnyAttr> AddAnyAttr for ClientOnly<V> {
    type Output<SomeNewAttr: Attribute> = ClientOnly<V::Output<SomeNewAttr>>;

    fn add_any_attr<NewAttr: Attribute>(self, attr: NewAttr) -> Self::Output<NewAttr>
    where
        Self::Output<NewAttr>: RenderHtml,
    {
        ClientOnly(self.0.add_any_attr(attr))
    }
}

impl<V: RenderHtml> RenderHtml for ClientOnly<V> {
    type AsyncOutput = Self;
    type Owned = ClientOnly<V::Owned>;

    const MIN_LENGTH: usize = 3;

    fn dry_resolve(&mut self) {}

    async fn resolve(self) -> Self::AsyncOutput {
        self
    }

    /// The placeholder `()` renders: the browser puts the view in front of it.
    fn to_html_with_buf(
        self,
        buf: &mut String,
        position: &mut Position,
        escape: bool,
        _mark_branches: bool,
        _extra_attrs: Vec<AnyAttribute>,
    ) {
        if escape {
            buf.push_str("<!>");
            *position = Position::NextChild;
        }
    }

    fn hydrate<const FROM_SERVER: bool>(self, cursor: &Cursor, position: &PositionState) -> Self::State {
        let marker = cursor.next_placeholder(position);
        position.set(Position::NextChild);
        let mut view = self.0.build();
        Rndr::mount_before(&mut view, marker.as_ref());
        ClientOnlyState { view, marker }
    }

    fn into_owned(self) -> Self::Owned {
        ClientOnly(self.0.into_owned())
    }
}

/// `<Show when fallback>` without its cost: Show's fallback is an `AnyView`, which compiles two hydrations of the
/// fallback's view type (one async) wherever it is used, drawn by the server or not. `shown` or `otherwise` is
/// drawn anew each time `when` changes.
pub fn show_or<A, B>(
    when: impl Fn() -> bool + Send + Sync + 'static,
    shown: impl Fn() -> A + Send + Sync + 'static,
    otherwise: impl Fn() -> B + Send + Sync + 'static,
) -> impl leptos::prelude::IntoView
where
    A: leptos::prelude::IntoView + 'static,
    B: leptos::prelude::IntoView + 'static,
{
    use leptos::either::Either;
    use leptos::prelude::{ArcMemo, Get};
    let when = ArcMemo::new(move |_| when());
    move || if when.get() { Either::Left(shown()) } else { Either::Right(otherwise()) }
}

/// Converts a view drawn only under [`ClientOnly`] into a [`RowView`].
pub trait IntoRowView {
    fn into_row_view(self) -> RowView;
}

/// The server renders these views to HTML only in its own tests; there `RowView` is Leptos' `AnyView`.
#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
pub type RowView = AnyView;

#[cfg(not(all(feature = "hydrate", not(feature = "ssr"))))]
impl<T: RenderHtml> IntoRowView for T {
    fn into_row_view(self) -> RowView {
        self.into_any()
    }
}

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
pub use self::browser::RowView;

#[cfg(all(feature = "hydrate", not(feature = "ssr")))]
mod browser {
    use std::any::Any;

    use super::*;

    type Value = Box<dyn Any + Send>;

    /// A type-erased view that can be built, but neither rendered to HTML nor hydrated.
    ///
    /// Unlike `AnyView` it has no per-type `rebuild`: a closure that yields a new row view builds it anew. Such
    /// closures re-run when what they show changes kind (a card opens, a fold expands, a question gets its answer),
    /// where diffing against the old DOM bought little, and a rebuild function per erased type is WASM.
    pub struct RowView {
        value: Value,
        build: fn(Value) -> RowViewState,
    }

    /// The built state of a [`RowView`]: the erased view's own, and a placeholder when that view has no node.
    pub struct RowViewState {
        state: Box<dyn Mountable>,
        placeholder: Option<Placeholder>,
    }

    fn build<T: RenderHtml + 'static>(value: Value) -> RowViewState {
        let value = *value.downcast::<T>().expect("a RowView holds the type it was made from");
        RowViewState { state: Box::new(value.build()), placeholder: (!T::EXISTS).then(Rndr::create_placeholder) }
    }

    impl<T: RenderHtml> IntoRowView for T {
        fn into_row_view(self) -> RowView {
            RowView { value: Box::new(self.into_owned()), build: build::<T::Owned> }
        }
    }

    impl Render for RowView {
        type State = RowViewState;

        fn build(self) -> Self::State {
            (self.build)(self.value)
        }

        fn rebuild(self, state: &mut Self::State) {
            let mut new = self.build();
            match &mut state.placeholder {
                Some(placeholder) => {
                    placeholder.insert_before_this(&mut new);
                    placeholder.unmount();
                }
                None => {
                    state.insert_before_this(&mut new);
                }
            }
            state.unmount();
            *state = new;
        }
    }

    impl Mountable for RowViewState {
        fn unmount(&mut self) {
            self.state.unmount();
            if let Some(placeholder) = &mut self.placeholder {
                placeholder.unmount();
            }
        }

        fn mount(&mut self, parent: &Element, marker: Option<&Node>) {
            self.state.mount(parent, marker);
            if let Some(placeholder) = &mut self.placeholder {
                placeholder.mount(parent, marker);
            }
        }

        fn insert_before_this(&self, child: &mut dyn Mountable) -> bool {
            self.state.insert_before_this(child)
                || self.placeholder.as_ref().is_some_and(|placeholder| placeholder.insert_before_this(child))
        }

        fn elements(&self) -> Vec<Element> {
            self.state.elements()
        }
    }

    impl AddAnyAttr for RowView {
        type Output<SomeNewAttr: Attribute> = RowView;

        /// Attributes are never spread onto the transcript's rows.
        fn add_any_attr<NewAttr: Attribute>(self, _attr: NewAttr) -> Self::Output<NewAttr>
        where
            Self::Output<NewAttr>: RenderHtml,
        {
            self
        }
    }

    impl RenderHtml for RowView {
        type AsyncOutput = Self;
        type Owned = Self;

        const MIN_LENGTH: usize = 0;

        fn dry_resolve(&mut self) {}

        async fn resolve(self) -> Self::AsyncOutput {
            self
        }

        fn to_html_with_buf(
            self,
            _buf: &mut String,
            _position: &mut Position,
            _escape: bool,
            _mark_branches: bool,
            _extra_attrs: Vec<AnyAttribute>,
        ) {
            unreachable!("the browser build renders no HTML");
        }

        fn hydrate<const FROM_SERVER: bool>(self, _cursor: &Cursor, _position: &PositionState) -> Self::State {
            unreachable!("row views live under ClientOnly, which builds them instead of hydrating them");
        }

        fn into_owned(self) -> Self::Owned {
            self
        }
    }
}
