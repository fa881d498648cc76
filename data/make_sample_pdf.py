"""Build the sample corpus PDF: a two-page article on 19th-century lighthouse keeping.

Run from the repository root:

    .venv/bin/python data/make_sample_pdf.py

The output is deterministic (reportlab's invariant mode fixes the creation date and document
id), so re-running the script does not change the committed PDF.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reportlab.graphics.shapes import Drawing, Line, Polygon, Rect, String
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.platypus import Flowable, Paragraph, SimpleDocTemplate, Spacer

DEFAULT_OUTPUT = (
    Path(__file__).parent
    / "sample"
    / "articles"
    / "history"
    / "lighthouse_keeping_19th_century.pdf"
)

TITLE = "Lighthouse Keeping in the Nineteenth Century"

# (heading, paragraphs) pairs; headings of None continue the previous section.
SECTIONS: list[tuple[str | None, list[str]]] = [
    (
        None,
        [
            "For most of the nineteenth century, every lighthouse on the coasts of Europe and North "
            "America depended on people. Keepers lit the lamps at sunset, tended them through the night, "
            "and prepared them again each morning. Their work changed more between 1800 and 1900 than in "
            "the previous two thousand years, as better lamps, new lenses and national lighthouse "
            "authorities transformed a dangerous, poorly paid job into a disciplined public service.",
        ],
    ),
    (
        "From open fires to the Argand lamp",
        [
            "Early lights burned wood, coal or tallow candles, which gave a weak, smoky light. The first "
            "great improvement was the lamp invented by the Swiss physicist Aimé Argand around 1780. Its "
            "hollow, circular wick drew a current of air up through the middle of the flame, and a glass "
            "chimney steadied the draught. The result was a bright, nearly smokeless flame several times "
            "stronger than a candle. Placed at the focus of a polished parabolic reflector, an Argand lamp "
            "could send a beam many miles out to sea. Many lights of the early 1800s used ten or more such "
            "lamps and reflectors mounted on a frame.",
        ],
    ),
    (
        "The Fresnel lens",
        [
            "In 1822 the French physicist Augustin-Jean Fresnel presented a new kind of lens to the French "
            "lighthouse commission. Instead of one thick curved glass, it used concentric rings of prisms "
            "arranged around a central lens, bending and reflecting light from a single lamp into a "
            "horizontal beam. The design captured far more of the lamp's light than mirrors did and was much "
            "thinner and lighter than a solid lens of the same size. The first Fresnel lens went into service "
            "in 1823 at the Cordouan lighthouse in the Gironde estuary in south-west France.",
            "Fresnel lenses were made in sizes called orders. A first-order lens, with a focal length of "
            "about 920 millimetres, was used in major coastal lights and stood taller than a man; the "
            "smallest, the sixth order, with a focal length of about 150 millimetres, served harbours and "
            "piers. By the 1850s the lenses had been adopted across Europe, and after the United States "
            "created the Lighthouse Board in 1852 they were installed in American lighthouses as well.",
        ],
    ),
    (
        "Fuel",
        [
            "The fuel a keeper handled changed several times. Sperm whale oil burned cleanly but became "
            "very expensive in the middle of the century. Colza oil, pressed from rapeseed, was the usual "
            "fuel in French lights and was tried in American ones in the 1850s; American lighthouses then "
            "switched to lard oil in the 1860s. From the 1870s kerosene, then called mineral oil, became "
            "the standard fuel. Kerosene was cheap and bright but volatile, and many stations built "
            "separate brick or iron oil houses to keep it away from the tower.",
        ],
    ),
    (
        "A keeper's day",
        [
            "The keeper's routine was set out in printed instructions and checked by inspectors. At sunset "
            "the lamp was lit and the clockwork that turned the lens was set in motion. The clockwork was "
            "driven by heavy weights hanging in the centre of the tower, and it had to be wound every few "
            "hours through the night. Keepers divided the night into watches and wrote in the log book "
            "the weather, the state of the light, the oil consumed and any ships in distress.",
            "At sunrise the flame was put out. The keeper then trimmed the wick, which is why keepers were "
            "nicknamed wickies, refilled the lamp, polished the brass and cleaned every prism of the lens "
            "with a soft cloth and spirits. Linen curtains were drawn around the lantern during the day, "
            "because sunlight focused by the lens could discolour the glass or even start a fire. A light "
            "that went dark or showed the wrong pattern of flashes could cause a wreck, and a keeper could "
            "lose his post for it.",
            "Each light had its own characteristic: a fixed light, or a pattern of flashes and eclipses "
            "produced by the rotating lens, which allowed a navigator to tell one lighthouse from another. "
            "In fog, the light was supplemented by bells, guns and, later in the century, steam whistles "
            "and sirens, which the keepers also had to fire or stoke.",
        ],
    ),
    (
        "Rock stations and isolation",
        [
            "Lighthouses built on wave-swept rocks far from land, such as the Eddystone off Plymouth, were "
            "the hardest postings. John Smeaton's granite Eddystone tower, completed in 1759 with dovetailed "
            "stones, served until it was replaced by James Douglass's taller tower in 1882. In Scotland, Alan "
            "Stevenson completed Skerryvore in 1844; at about 48 metres it is still the tallest lighthouse in "
            "Scotland. Crews on such rocks served for weeks at a time and were relieved by boat when the "
            "weather allowed. In Britain, rock stations came to be manned by three keepers, partly because of "
            "the story of the Smalls lighthouse in Wales, where around 1801 one of two keepers died and his "
            "companion had to keep the body for weeks before relief arrived.",
        ],
    ),
    (
        "Women keepers and famous rescues",
        [
            "Keeping was often a family occupation, and wives and daughters did much of the work. On 7 "
            "September 1838 the steamer Forfarshire struck a rock in the Farne Islands off Northumberland. "
            "From the Longstone lighthouse, Grace Darling, aged twenty-two, and her father William rowed a "
            "small boat through a storm and rescued nine survivors. She became a national heroine.",
            "In the United States, Ida Lewis kept the Lime Rock light in Newport, Rhode Island, first "
            "informally after her father fell ill and officially from 1879. She was credited with saving at "
            "least eighteen people from the water. Many other women held official appointments as keepers "
            "or assistant keepers, often taking over a station after a husband or father died.",
        ],
    ),
    (
        "The end of an era",
        [
            "The nineteenth-century keeper's world began to disappear in the twentieth century. Incandescent "
            "oil-vapour burners and then electric lamps replaced wicks, and automatic gas lights, sun valves "
            "and later remote monitoring made resident keepers unnecessary. The United States Lighthouse "
            "Board gave way to the Bureau of Lighthouses in 1910, which was merged into the Coast Guard in "
            "1939. The last staffed lighthouses in Britain were automated in 1998, and many former keepers' "
            "cottages are now museums or holiday lets.",
        ],
    ),
]


class LighthouseFigure(Flowable):
    """A simple vector drawing of a lighthouse, so the PDF contains an image as well as text."""

    def __init__(self, width: float = 9 * cm, height: float = 6.5 * cm) -> None:
        super().__init__()
        self.width = width
        self.height = height
        self.hAlign = "CENTER"

    def wrap(self, available_width: float, available_height: float) -> tuple[float, float]:
        return self.width, self.height

    def draw(self) -> None:
        self._build_drawing().drawOn(self.canv, 0, 0)

    def _build_drawing(self) -> Drawing:
        drawing = Drawing(self.width, self.height)
        mid = self.width / 2
        night_sky, sea = colors.HexColor("#1d2a44"), colors.HexColor("#2f5d8a")
        drawing.add(Rect(0, 0, self.width, self.height, fillColor=night_sky, strokeColor=None))
        drawing.add(Rect(0, 0, self.width, 0.9 * cm, fillColor=sea, strokeColor=None))
        # Beams first, so the tower is drawn over them.
        lamp_y = 4.9 * cm
        for direction in (-1, 1):
            edge_x = mid + direction * (self.width / 2)
            drawing.add(
                Polygon(
                    [mid, lamp_y, edge_x, lamp_y + 0.9 * cm, edge_x, lamp_y - 0.5 * cm],
                    fillColor=colors.HexColor("#f7e8a4"),
                    strokeColor=None,
                )
            )
        base_half, top_half, base_y, top_y = 1.0 * cm, 0.6 * cm, 0.9 * cm, 4.4 * cm
        roof_base, roof_peak = top_y + 0.85 * cm, top_y + 1.35 * cm
        bands = 4
        for band in range(bands):
            y0 = base_y + (top_y - base_y) * band / bands
            y1 = base_y + (top_y - base_y) * (band + 1) / bands
            half0 = base_half + (top_half - base_half) * band / bands
            half1 = base_half + (top_half - base_half) * (band + 1) / bands
            drawing.add(
                Polygon(
                    [mid - half0, y0, mid + half0, y0, mid + half1, y1, mid - half1, y1],
                    fillColor=colors.HexColor("#c0392b") if band % 2 == 0 else colors.white,
                    strokeColor=colors.black,
                    strokeWidth=0.5,
                )
            )
        drawing.add(Rect(mid - 0.75 * cm, top_y, 1.5 * cm, 0.15 * cm, fillColor=colors.black))
        lantern_glow = colors.HexColor("#fff3b0")
        drawing.add(
            Rect(mid - 0.45 * cm, top_y + 0.15 * cm, 0.9 * cm, 0.7 * cm, fillColor=lantern_glow)
        )
        drawing.add(
            Polygon(
                [mid - 0.55 * cm, roof_base, mid + 0.55 * cm, roof_base, mid, roof_peak],
                fillColor=colors.black,
            )
        )
        drawing.add(
            Line(0.3 * cm, 0.6 * cm, self.width - 0.3 * cm, 0.6 * cm, strokeColor=colors.white)
        )
        caption = "Figure 1. A rock lighthouse at night."
        drawing.add(String(0.3 * cm, 0.2 * cm, caption, fontSize=7, fillColor=colors.white))
        return drawing


def build_story() -> list[Flowable]:
    """Lay out the title, the drawing and the article sections as reportlab flowables."""
    styles = getSampleStyleSheet()
    body = ParagraphStyle(
        "Body", parent=styles["BodyText"], fontSize=10, leading=13.5, spaceAfter=6
    )
    heading = ParagraphStyle(
        "Heading", parent=styles["Heading2"], fontSize=12.5, spaceBefore=8, spaceAfter=4
    )
    story: list[Flowable] = [
        Paragraph(TITLE, styles["Title"]),
        LighthouseFigure(),
        Spacer(1, 0.4 * cm),
    ]
    for section_heading, paragraphs in SECTIONS:
        if section_heading is not None:
            story.append(Paragraph(section_heading, heading))
        story.extend(Paragraph(text, body) for text in paragraphs)
    return story


def write_pdf(output: Path) -> Path:
    """Render the article to `output` (parent folders are created) and return the path."""
    output.parent.mkdir(parents=True, exist_ok=True)
    document = SimpleDocTemplate(
        str(output),
        pagesize=A4,
        leftMargin=2.2 * cm,
        rightMargin=2.2 * cm,
        topMargin=2 * cm,
        bottomMargin=2 * cm,
        title=TITLE,
        author="memory-bank sample corpus",
        invariant=True,
    )
    document.build(build_story())
    return output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the PDF"
    )
    print(write_pdf(parser.parse_args().output))


if __name__ == "__main__":
    main()
