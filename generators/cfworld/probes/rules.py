"""The rule-decoupling table: 33 minimal symbolic scenes, each governed by one directional law.

Every rule is data. ``setup`` is the scene with placeholders for where its driving element
sits (``{at_pos}`` "in the top-left corner", ``{pos}`` "top-left", ``{toward_pos}`` "towards
the top-left corner", and the same for the opposite side: ``{at_opp}``, ``{opp}``,
``{toward_opp}``). ``outcome`` says where the arrow points in our world: ``away`` from the
driving element, ``toward`` it, or a fixed direction for rules whose result does not depend
on any element's position (gravity, buoyancy, growth). ``layouts`` are the driving
element's positions used for the factual prompts: two for positional rules, none for
fixed ones. Directions are screen directions: ``right``, ``up-right``, ``up``, ``up-left``,
``left``, ``down-left``, ``down``, ``down-right``.

``reversal`` is the reversed law as a changed mechanism ("heat flows from a cold body to a hot
one"); it names no screen direction, so the answer has to be worked out from the scene.
``motion`` says where the moving thing can go at all: ``free`` (any direction), ``channel``
(only along the line through its layout, as water in a pipe: such a rule is only reversed,
in more layouts, listed in ``extra_layouts``) or ``ramp`` (a ball on a ramp rising towards
its layout cannot move into the ramp).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    key: str  # slug, unique
    domain: str
    law: str  # the factual law in one sentence
    setup: str  # the scene, composed into "On a plain white background, draw {setup}."
    arrow: str  # what to draw: "a red arrow starting from the black square"
    shows: str  # what the arrow indicates: "the direction of the shadow the square casts"
    subject: str  # noun phrase for the counterfactual statements: "the shadow"
    marker: str  # the arrow as named in assessment points: "Red arrow"
    outcome: str  # "away" | "toward" | a fixed direction
    layouts: tuple[str, ...] = ()
    reversal: str = ""  # the reversed law, naming no screen direction
    motion: str = "free"  # free / channel / ramp
    extra_layouts: tuple[str, ...] = ()  # more layouts for the counterfactual prompts of a channel rule


RULES: tuple[Rule, ...] = (
    # -- fixed outcomes: one factual prompt and five counterfactual ones each
    Rule("falling-ball", "physics", "An unsupported object falls straight down under gravity.",
         "a red sphere hanging in mid-air in the centre, with a cut string above it",
         "a black arrow starting from the red sphere", "the direction in which the sphere moves once the string is cut",
         "the sphere's motion", "Black arrow", "down",
         reversal="the Earth repels unsupported objects instead of attracting them"),
    Rule("rising-cork", "physics", "An object lighter than water floats up when released under water.",
         "a tall blue rectangle of water with a small brown cork held in its middle by a pin that is just being removed",
         "a black arrow starting from the cork", "the direction in which the cork moves once released",
         "the cork's motion", "Black arrow", "up",
         reversal="objects lighter than water sink in it and heavier ones float"),
    Rule("rising-smoke", "physics", "Hot smoke is lighter than the surrounding air and rises.",
         "a short white candle with a small orange flame, standing in the centre",
         "a grey arrow starting from the flame", "the direction in which the smoke drifts",
         "the smoke", "Grey arrow", "up",
         reversal="hot smoke is heavier than the cooler air around it"),
    Rule("shoot-growth", "biology", "A plant shoot grows upwards, against gravity.",
         "a brown seed lying in a horizontal band of dark soil across the middle of the picture",
         "a green arrow starting from the seed", "the direction in which its shoot grows",
         "the shoot's growth", "Green arrow", "up",
         reversal="plant shoots grow with gravity instead of against it"),
    Rule("root-growth", "biology", "A plant root grows downwards, with gravity.",
         "a brown seed lying in a horizontal band of dark soil across the middle of the picture",
         "a brown arrow starting from the seed", "the direction in which its root grows",
         "the root's growth", "Brown arrow", "down",
         reversal="plant roots grow against gravity instead of with it"),
    Rule("rain-fall", "geography", "Raindrops fall straight down from a cloud on a windless day.",
         "a grey cloud shape in the centre of a windless sky",
         "blue arrows starting from the underside of the cloud", "the direction in which the raindrops fall",
         "the raindrops' fall", "Blue arrows", "down",
         reversal="the Earth repels raindrops instead of attracting them"),
    # -- positional outcomes: two factual prompts (two layouts) and four counterfactual ones each
    Rule("shadow", "physics", "A shadow falls on the side of an object facing away from the light source.",
         "a glowing yellow dot {at_pos} and a black square in the exact centre",
         "a red arrow starting from the black square", "the direction of the shadow the square casts",
         "the shadow", "Red arrow", "away", ("up-left", "right"),
         reversal="a shadow falls on the side of an object that faces the light source"),
    Rule("heat-conduction", "physics", "Heat flows from a hot body to a cold one.",
         "a red square standing for a hot body {at_pos} and a blue square standing for a cold body {at_opp}, touching in the centre",
         "a black arrow starting from the point where the squares touch", "the direction in which heat flows",
         "the heat flow", "Black arrow", "away", ("left", "up"),
         reversal="heat flows from a cold body to a hot one"),
    Rule("friction", "physics", "Sliding friction acts opposite to the direction of motion.",
         "a grey block seen from above on a flat grey table, with speed lines showing that it slides {toward_pos}",
         "a red arrow starting from the block", "the direction of the friction force acting on it",
         "the friction force", "Red arrow", "away", ("right", "up"),
         reversal="sliding friction pushes a block along its direction of motion"),
    Rule("magnet-attraction", "physics", "A magnet pulls a steel ball towards itself.",
         "a red and blue horseshoe magnet {at_pos} and a small grey steel ball in the centre",
         "a black arrow starting from the steel ball", "the direction in which the ball moves",
         "the steel ball's motion", "Black arrow", "toward", ("left", "up-right"),
         reversal="a magnet repels steel instead of attracting it"),
    Rule("like-charges", "physics", "Two like electric charges repel each other.",
         "a fixed red circle marked with a plus sign {at_pos} and a free red circle marked with a plus sign in the centre",
         "a black arrow starting from the centre circle", "the direction in which the centre circle moves",
         "the centre circle's motion", "Black arrow", "away", ("down", "up-left"),
         reversal="two like electric charges attract each other"),
    Rule("unlike-charges", "physics", "Two opposite electric charges attract each other.",
         "a fixed blue circle marked with a minus sign {at_pos} and a free red circle marked with a plus sign in the centre",
         "a black arrow starting from the red circle", "the direction in which the red circle moves",
         "the red circle's motion", "Black arrow", "toward", ("right", "down-left"),
         reversal="two opposite electric charges repel each other"),
    Rule("diffusion", "chemistry", "Particles spread from where they are dense to where they are sparse.",
         "a rectangular box whose {pos} half is densely filled with small black dots while its {opp} half holds only a few",
         "a red arrow in the centre of the box", "the net direction in which the dots move",
         "the dots' net motion", "Red arrow", "away", ("left", "down"),
         reversal="particles gather from where they are sparse to where they are dense"),
    Rule("pressure-wind", "geography", "Wind blows from high air pressure to low air pressure.",
         "a large letter H in a white circle {at_pos} and a large letter L in a white circle {at_opp}",
         "a blue arrow between the two circles", "the direction in which the wind blows",
         "the wind", "Blue arrow", "away", ("up", "left"),
         reversal="wind blows from low air pressure to high air pressure"),
    Rule("phototropism", "biology", "A seedling bends towards the light.",
         "a small green seedling in a pot in the centre and a glowing yellow lamp {at_pos}",
         "a green arrow starting from the tip of the seedling", "the direction in which the seedling bends",
         "the seedling's bending", "Green arrow", "toward", ("up-right", "left"),
         reversal="a seedling bends away from the light"),
    Rule("osmosis", "chemistry", "Water crosses a membrane towards the side with more dissolved salt.",
         "a box split by a dashed membrane, the {pos} side crowded with small white salt dots and the {opp} side holding clear water",
         "a blue arrow starting from the middle of the membrane", "the direction in which the water moves",
         "the water's flow", "Blue arrow", "toward", ("right", "up"),
         reversal="water crosses a membrane towards the side with less dissolved salt"),
    Rule("river-flow", "geography", "A river flows downhill from the mountains to the sea.",
         "a brown triangle standing for a mountain {at_pos}, a blue patch of sea {at_opp} and a wavy blue river between them",
         "a black arrow on the river", "the direction in which the river flows",
         "the river's flow", "Black arrow", "away", ("up-left", "down-left"),
         reversal="rivers flow from the sea to the mountains", motion="channel",
         extra_layouts=("right", "down")),
    Rule("recoil", "physics", "A cannon that fires a ball is pushed back the opposite way.",
         "a black cannon in the centre firing a small ball {toward_pos}",
         "a red arrow starting from the cannon", "the direction in which the cannon moves after the shot",
         "the cannon's recoil", "Red arrow", "away", ("right", "up-right"),
         reversal="a cannon that fires a ball is pushed the same way as the ball"),
    Rule("rocket-thrust", "physics", "A rocket moves opposite to the direction of its exhaust.",
         "a white rocket in the centre with orange exhaust flames streaming out {toward_pos}",
         "a black arrow starting from the rocket", "the direction in which the rocket moves",
         "the rocket's motion", "Black arrow", "away", ("down", "left"),
         reversal="a rocket moves the same way as its exhaust"),
    Rule("electric-current", "physics", "Conventional current leaves a battery's positive terminal.",
         "a battery with its plus terminal {at_pos} and its minus terminal {at_opp}, joined through a straight wire in the centre",
         "a red arrow on the wire", "the direction of the conventional current in the wire",
         "the electric current", "Red arrow", "away", ("left", "up"),
         reversal="conventional current leaves a battery's negative terminal", motion="channel",
         extra_layouts=("up-right", "down-left")),
    Rule("prey-escape", "biology", "Prey runs away from a predator.",
         "a small grey rabbit shape in the centre and an orange fox shape {at_pos}",
         "a black arrow starting from the rabbit", "the direction in which the rabbit runs",
         "the rabbit's escape", "Black arrow", "away", ("up-right", "down"),
         reversal="prey runs towards its predator"),
    Rule("chemotaxis", "biology", "Bacteria swim towards a source of sugar.",
         "a small green oval bacterium in the centre and a pile of white sugar cubes {at_pos}",
         "a black arrow starting from the bacterium", "the direction in which the bacterium swims",
         "the bacterium's swimming", "Black arrow", "toward", ("left", "down-right"),
         reversal="bacteria swim away from sugar"),
    Rule("bird-migration", "biology", "In autumn migratory birds fly towards warmer regions.",
         "an orange band standing for a warm region {at_pos}, a pale blue band standing for a cold region {at_opp}, "
         "and a flock of small black V shapes in the centre in autumn",
         "a black arrow starting from the flock", "the direction in which the flock flies",
         "the flock's flight", "Black arrow", "toward", ("down", "right"),
         reversal="in autumn migratory birds fly towards colder regions"),
    Rule("evacuation", "sociology", "People leave a room through its exit when an alarm sounds.",
         "a square room seen from above, a green exit door {at_pos}, a cluster of small grey dots standing for people "
         "in the centre, and a red alarm light flashing",
         "a black arrow starting from the cluster", "the direction in which the people move",
         "the crowd's movement", "Black arrow", "toward", ("up", "left"),
         reversal="people move away from the exit when an alarm sounds"),
    Rule("payment", "sociology", "In a purchase, money moves from the buyer to the seller.",
         "a blue circle standing for a buyer {at_pos}, a yellow circle standing for a seller {at_opp}, and a coin between them",
         "a green arrow starting from the coin", "the direction in which the money moves",
         "the money's movement", "Green arrow", "away", ("left", "down"),
         reversal="in a purchase, money moves from the seller to the buyer"),
    Rule("slope-roll", "physics", "A ball on a ramp rolls towards the low end.",
         "a straight grey ramp rising {toward_pos}, with a red ball resting on it halfway up",
         "a black arrow starting from the ball", "the direction in which the ball rolls",
         "the ball's roll", "Black arrow", "away", ("up-left", "up-right"),
         reversal="a ball on a ramp rolls towards the high end", motion="ramp"),
    Rule("planet-pull", "physics", "A planet's gravity pulls a nearby small moon towards it.",
         "a large brown planet {at_pos} and a small grey moon at rest in the centre",
         "a black arrow starting from the moon", "the direction in which the moon starts to move",
         "the moon's motion", "Black arrow", "toward", ("right", "up-left"),
         reversal="a planet's gravity pushes a nearby small moon away from it"),
    Rule("spring-push", "physics", "A compressed spring pushes away the block pressed against it.",
         "a grey block in the centre with a tightly compressed black spring pressed against it {from_pos}",
         "a red arrow starting from the block", "the direction in which the block moves when released",
         "the block's motion", "Red arrow", "away", ("left", "down-right"),
         reversal="a compressed spring pulls the block pressed against it towards itself"),
    Rule("elastic-pull", "physics", "A stretched elastic band pulls the block tied to it back towards its anchor.",
         "a grey block in the centre tied by a stretched yellow elastic band to a peg {at_pos}",
         "a red arrow starting from the block", "the direction in which the block moves when released",
         "the block's motion", "Red arrow", "toward", ("up", "right"),
         reversal="a stretched elastic band pushes the block tied to it away from its anchor"),
    Rule("compass-needle", "geography", "A compass needle's red end points to the magnetic north pole.",
         "a round compass in the centre and a large blue letter N standing for the magnetic north pole {at_pos}",
         "the red end of the compass needle as an arrow", "the direction in which the needle's red end points",
         "the compass needle's red end", "Red needle end", "toward", ("up", "down-left"),
         reversal="a compass needle's red end points away from the magnetic north pole"),
    Rule("electrophoresis", "chemistry", "Positive ions move towards the negative electrode.",
         "a tank of liquid with a black plate marked with a minus sign {at_pos} and a red plate marked with a plus sign {at_opp}, "
         "and a group of small red circles marked with plus signs in the centre",
         "a black arrow starting from the group of circles", "the direction in which the positive ions move",
         "the positive ions' motion", "Black arrow", "toward", ("right", "down"),
         reversal="positive ions move towards the positive electrode"),
    Rule("gas-leak", "chemistry", "Gas escapes from a high-pressure tank into the empty space around it.",
         "a grey gas cylinder lying {at_pos} of an empty room, its open valve facing the middle of the room",
         "grey arrows starting from the valve", "the direction in which the gas moves",
         "the escaping gas", "Grey arrows", "away", ("left", "up-left"),
         reversal="gas flows from the space around a tank into the tank, even through an open valve"),
    Rule("ant-foraging", "biology", "Foraging ants carry food back to their nest.",
         "a brown mound standing for an ant nest {at_pos} and a line of small black ants carrying crumbs in the centre",
         "a black arrow starting from the ants", "the direction in which the ants walk",
         "the ants' march", "Black arrow", "toward", ("down-left", "up"),
         reversal="foraging ants carry food away from their nest"),
)
