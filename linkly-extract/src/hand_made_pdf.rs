//! PDFs written by hand for the tests of this crate, of the command line and for the
//! benchmarks: pages of Helvetica text, pages that are only scanned pictures. Not API: hidden
//! from the docs.

/// A PDF of `objects`, numbered from 1 (the first is the catalog): the `%PDF-<version>` header,
/// the objects, the cross-reference table and the trailer.
pub fn pdf_of_objects(version: &str, objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("%PDF-{version}\n").into_bytes();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).bytes());
        out.extend_from_slice(o);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for off in offsets {
        out.extend(format!("{off:010} 00000 n \n").bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    out
}

/// A PDF whose pages, `media` (width, height) points large, each draw one of the content
/// streams `pages`, with Helvetica as the font `/F1`.
pub fn helvetica_pages(media: (u32, u32), pages: &[String]) -> Vec<u8> {
    let (w, h) = media;
    let kids: Vec<String> = (0..pages.len())
        .map(|i| format!("{} 0 R", 4 + 2 * i))
        .collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            pages.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    for (i, content) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
            5 + 2 * i
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    let objects: Vec<Vec<u8>> = objects.into_iter().map(String::into_bytes).collect();
    pdf_of_objects("1.4", &objects)
}

/// A one-page A4 PDF of `lines` in 9-point Helvetica, one under the other.
pub fn text_pdf(lines: &[String]) -> Vec<u8> {
    let mut content = String::from("BT /F1 9 Tf 30 810 Td 12 TL\n");
    for l in lines {
        content.push_str(&format!("({l}) Tj T*\n"));
    }
    content.push_str("ET");
    helvetica_pages((595, 842), &[content])
}

/// A PDF whose pages are the given JPEGs (bytes, width, height) at 300 dpi, without text.
pub fn scanned_pdf(pages: &[(&[u8], u32, u32)]) -> Vec<u8> {
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 3 + 3 * i)).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
    ];
    for (i, (jpg, w, h)) in pages.iter().enumerate() {
        let (pw, ph) = (*w as f64 * 72.0 / 300.0, *h as f64 * 72.0 / 300.0);
        let page = 3 + 3 * i;
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {pw} {ph}] /Contents {} 0 R /Resources << /XObject << /Im0 {} 0 R >> >> >>",
            page + 1,
            page + 2
        ).into_bytes());
        let c = format!("q {pw} 0 0 {ph} 0 0 cm /Im0 Do Q");
        objects.push(format!("<< /Length {} >>\nstream\n{c}\nendstream", c.len()).into_bytes());
        let mut img = format!(
            "<< /Type /XObject /Subtype /Image /Width {w} /Height {h} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length {} >>\nstream\n",
            jpg.len()
        )
        .into_bytes();
        img.extend_from_slice(jpg);
        img.extend_from_slice(b"\nendstream");
        objects.push(img);
    }
    pdf_of_objects("1.5", &objects)
}
